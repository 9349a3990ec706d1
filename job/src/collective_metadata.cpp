// What a collective's records say of it: type, group, sequence number, group size and message bytes, read
// from the args of its kernel and of the host records around its launch (collective_metadata.h).
#include "collective_metadata.h"

#include <cctype>
#include <string>

namespace ptadvise::job_detail {
namespace {

int64_t dtype_bytes(std::string_view dtype) {
  std::string t;
  for (char c : dtype) t += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (t.find("float8") != std::string::npos || t.find("int8") != std::string::npos || t == "byte" || t == "char" ||
      t == "bool" || t == "unsigned char" || t == "signed char" || t == "uint8") {
    return 1;
  }
  if (t == "half" || t == "bfloat16" || t == "float16" || t == "short" || t == "int16" || t == "c10::half" ||
      t == "c10::bfloat16") {
    return 2;
  }
  if (t == "double" || t == "long" || t == "int64" || t == "long int" || t == "complexfloat" || t == "float64") return 8;
  if (t == "float" || t == "int" || t == "int32" || t == "float32") return 4;
  return 0;
}

// Number of elements of the first tensor of an `Input Dims` value like [[19618307], [], ...].
int64_t first_tensor_elements(std::string_view dims) {
  size_t open = dims.find('[', dims.find('[') + 1);
  if (open == std::string_view::npos) return 0;
  size_t close = dims.find(']', open);
  if (close == std::string_view::npos || close == open + 1) return 0;
  int64_t product = 1;
  std::string_view inner = dims.substr(open + 1, close - open - 1);
  size_t pos = 0;
  while (pos < inner.size()) {
    size_t comma = inner.find(',', pos);
    std::string_view item = inner.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    int64_t value = 0;
    bool digits = false;
    for (char c : item) {
      if (c >= '0' && c <= '9') {
        value = value * 10 + (c - '0');
        digits = true;
        if (value > (int64_t{1} << 40)) return 0;
      }
    }
    if (!digits) return 0;
    // Checked before it is formed: a product of two hostile dims must not overflow.
    if (value != 0 && product > (int64_t{1} << 50) / value) return 0;
    product *= value;
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return product;
}

// The first string of an `Input type` value like ["float", ...].
std::string first_type(std::string_view types) {
  size_t q = types.find('"');
  if (q == std::string_view::npos) return {};
  size_t e = types.find('"', q + 1);
  if (e == std::string_view::npos) return {};
  return std::string(types.substr(q + 1, e - q - 1));
}

}  // namespace

int64_t message_bytes(int64_t elements, int64_t element_bytes) {
  constexpr int64_t kMaxBytes = int64_t{1} << 50;
  if (elements <= 0 || element_bytes <= 0 || elements > kMaxBytes / element_bytes) return 0;
  return elements * element_bytes;
}

void read_metadata(const Timeline& timeline, EventIndex e, CollectiveMetadata& meta) {
  if (timeline.events.args_length[e] == 0) return;
  if (!meta.type || *meta.type == CollectiveType::Other) {
    if (auto name = timeline.arg_string(e, "Collective name"); name && !name->empty()) {
      meta.type = collective_type_from_text(*name);
    }
  }
  if (meta.group.empty()) {
    if (auto group = timeline.arg_string(e, "Process Group Name")) meta.group = *group;
  }
  if (meta.seq < 0) {
    if (auto seq = timeline.arg_int(e, "Seq")) meta.seq = *seq;
    else if (auto seq2 = timeline.arg_int(e, "seq")) meta.seq = *seq2;
  }
  if (meta.group_size <= 0) {
    if (auto size = timeline.arg_int(e, "Group size"); size && *size > 0 && *size < (1 << 24)) {
      meta.group_size = static_cast<int32_t>(*size);
    }
  }
  if (meta.in_bytes <= 0 && meta.out_bytes <= 0) {
    int64_t element = 0;
    if (auto dtype = timeline.arg_string(e, "dtype")) element = dtype_bytes(*dtype);
    auto in = timeline.arg_int(e, "In msg nelems");
    auto out = timeline.arg_int(e, "Out msg nelems");
    if (element > 0 && (in || out)) {
      meta.in_bytes = message_bytes(in.value_or(0), element);
      meta.out_bytes = message_bytes(out.value_or(0), element);
    } else if (auto dims = timeline.arg_string(e, "Input Dims")) {
      auto types = timeline.arg_string(e, "Input type");
      int64_t size = types ? dtype_bytes(first_type(*types)) : 0;
      meta.in_bytes = message_bytes(first_tensor_elements(*dims), size);
    }
  }
}

}  // namespace ptadvise::job_detail
