// Event `args`, decoded once at load into short binary records whose keys and texts are interned: the
// JSON text of a trace is not kept after loading, and a lookup never parses JSON.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace ptadvise {

// Deduplicated texts in a few large pages; ids are dense and stable.
class TextPool {
 public:
  uint32_t intern(std::string_view text);
  uint32_t find(std::string_view text) const;  // kNone (0xFFFFFFFF) when absent
  std::string_view view(uint32_t id) const { return views_[id]; }
  size_t size() const { return views_.size(); }

 private:
  static uint64_t hash(std::string_view text);
  void grow_table();
  std::vector<std::unique_ptr<char[]>> pages_, large_;
  size_t page_used_ = 0, page_size_ = 0;
  std::vector<std::string_view> views_;
  std::vector<uint32_t> slots_;  // id + 1; 0 = empty
};

class ArgStore {
 public:
  using KeyId = uint32_t;
  enum class Type : uint8_t { Int, String, Raw, Null };
  // One value of args. Int: `number` (written as a plain integer); String: `text` unescaped; Raw: `text` as
  // written (other numbers, true, false, arrays and objects); Null: JSON null.
  struct Value {
    Type type = Type::Null;
    int64_t number = 0;
    std::string_view text;
  };

  // The id of a key, kNone when no event of this trace has it.
  KeyId key(std::string_view text) const { return keys_.find(text); }
  std::string_view key_text(KeyId key) const { return keys_.view(key); }
  // args[key] of event i (the first when a key is repeated); false when absent.
  bool find(uint32_t event, KeyId key, Value& value) const;
  bool empty(uint32_t event) const;
  // Every (key, value) of event i in the order written.
  template <typename Visit>
  void for_each(uint32_t event, Visit&& visit) const {
    const Record record = record_of(event);
    for (const uint8_t* at = record.begin; at < record.end;) {
      KeyId key = 0;
      Value value;
      at = decode(*record.block, at, key, value);
      visit(key_text(key), value);
    }
  }

  // For the loader. A block holds the records of consecutive events with ids local to it (events parsed
  // apart, on any thread); add_block maps its ids to the store's.
  struct Block {
    uint32_t first_event = 0;
    std::vector<uint8_t> bytes;
    std::vector<uint32_t> begin;  // per event of the block, then the end
    std::vector<KeyId> keys;      // local key id -> store key id (filled by add_block)
    std::vector<uint32_t> values;  // local text id -> store text id (filled by add_block)
  };
  void add_block(Block block, const TextPool& local_keys, const TextPool& local_values);
  size_t memory_bytes() const;

 private:
  struct Record {
    const Block* block = nullptr;
    const uint8_t* begin = nullptr;
    const uint8_t* end = nullptr;
  };
  Record record_of(uint32_t event) const;
  const uint8_t* decode(const Block& block, const uint8_t* at, KeyId& key, Value& value) const;
  std::vector<Block> blocks_;
  TextPool keys_, values_;
};

}  // namespace ptadvise
