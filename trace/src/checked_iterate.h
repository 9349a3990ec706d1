// Internal to trace/: simdjson's On-Demand iterate() with running out of memory reported as std::bad_alloc.
// simdjson returns MEMALLOC when it cannot allocate its structural index — an error code that would
// otherwise be taken for bad JSON (a window read event by event, an event skipped as broken): results
// quietly wrong instead of the one-line out-of-memory error. And simdjson 3.0's parser::allocate() does not
// check the allocation of its string buffer (new (std::nothrow), never tested): iterate() then succeeds and
// the first string read writes through a null pointer. Both are thrown here as std::bad_alloc.
// simdjson picks its implementation for this CPU on first use, inside noexcept functions that allocate:
// a failed allocation there ended the process (std::terminate). It is picked once, in a shield.
#pragma once

#include <simdjson.h>

#include "ptadvise/bad_alloc_shield.h"

#include <cstdint>
#include <memory>
#include <new>

namespace ptadvise::detail {

namespace parser_access {

// The standard lets an explicit instantiation name a private member; the friend function hands out the
// pointer to it. Only read, to see whether the buffer was allocated.
struct StringBuffer {
  using type = std::unique_ptr<uint8_t[]> simdjson::ondemand::parser::*;
  friend type member(StringBuffer);
};
template <class Tag, typename Tag::type Member>
struct Expose {
  friend typename Tag::type member(Tag) { return Member; }
};
template struct Expose<StringBuffer, &simdjson::ondemand::parser::string_buf>;

}  // namespace parser_access

// parser.iterate(text, length, allocated): the document, or a JSON error; throws std::bad_alloc when
// simdjson could not allocate.
inline simdjson::error_code checked_iterate(simdjson::ondemand::parser& parser, const char* text, size_t length,
                                            size_t allocated, simdjson::ondemand::document& doc) {
  // A shield that cannot set its reserve aside throws here, and the next call tries again.
  static const bool implementation_picked = [] {
    without_bad_alloc_inside([] { (void)simdjson::get_active_implementation()->name(); });
    return true;
  }();
  (void)implementation_picked;
  const simdjson::error_code error = parser.iterate(text, length, allocated).get(doc);
  if (error == simdjson::MEMALLOC) throw std::bad_alloc();
  if (!error && !(parser.*member(parser_access::StringBuffer{}))) throw std::bad_alloc();
  return error;
}

}  // namespace ptadvise::detail
