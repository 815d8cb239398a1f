// A check of a classic netCDF file's header (CDF-1, CDF-2, CDF-5) before netCDF reads it, in
// two parts. First the header itself:
// every count the header gives (dimensions, attributes, variables, name lengths, attribute
// values, dimensions of a variable) must fit in the bytes the file has. netCDF-C allocates
// what a count says before reading (a 40-byte file claiming 10^9 dimensions makes it allocate
// 8 GB); this refuses such a file with an estuary::Error first. The number of records is such a
// count too: the records must fit in the file (netCDF reads zeros past its end, and a reader
// would allocate the times of 10^9 records). Then the data: the file must be as long as the
// header implies — the end of every fixed-size variable and of the last record — or it was
// cut short (a full disk, an interrupted copy), and netCDF would read the missing tail as fill
// values in silence. Files that are not classic netCDF (netCDF-4/HDF5) are left to the library
// (HDF5 refuses a truncated file itself).
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "estuary/error.hpp"

namespace estuary::detail {

class CdfHeaderCheck {
 public:
  // Throws Error naming `path` when the header is inconsistent with the file's size.
  static void check(const std::string& path) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    if (ec) return;  // netCDF reports the failure to open
    CdfHeaderCheck c(path, size);
    c.run();
  }

 private:
  CdfHeaderCheck(const std::string& path, std::uint64_t size) : path_(path), in_(path, std::ios::binary), size_(size) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw Error("corrupt netCDF header: " + what, "file " + path_,
                "the file is damaged or truncated; write it again");
  }
  std::uint64_t left() const { return size_ - pos_; }
  void bytes(void* dst, std::uint64_t k) {
    if (k > left()) fail("it ends inside the header (byte " + std::to_string(size_) + ")");
    in_.read(static_cast<char*>(dst), static_cast<std::streamsize>(k));
    if (!in_) fail("cannot read byte " + std::to_string(pos_));
    pos_ += k;
  }
  void skip(std::uint64_t k) {
    if (k > left()) fail("it ends inside the header (byte " + std::to_string(size_) + ")");
    in_.seekg(static_cast<std::streamoff>(k), std::ios::cur);
    pos_ += k;
  }
  std::uint64_t be(int k) {  // a big-endian unsigned integer of k bytes
    unsigned char b[8];
    bytes(b, static_cast<std::uint64_t>(k));
    std::uint64_t v = 0;
    for (int i = 0; i < k; ++i) v = (v << 8) | b[i];
    return v;
  }
  std::uint64_t non_neg() { return be(v5_ ? 8 : 4); }
  // A count of items each taking at least `min_bytes`: refused when they cannot fit.
  std::uint64_t count(const std::string& what, std::uint64_t min_bytes) {
    const std::uint64_t n = non_neg();
    if (n > left() / min_bytes)
      fail(what + " count " + std::to_string(n) + " is more than the file's " + std::to_string(size_) +
           " bytes can hold");
    return n;
  }
  static std::uint64_t padded(std::uint64_t n) { return (n + 3) / 4 * 4; }
  void name() { skip(padded(count("name length", 1))); }
  static int type_size(std::uint64_t t) {
    switch (t) {
      case 1: case 2: case 7: return 1;
      case 3: case 8: return 2;
      case 4: case 5: case 9: return 4;
      case 6: case 10: case 11: return 8;
      default: return 0;
    }
  }
  void attributes() {
    const std::uint64_t tag = be(4);
    const std::uint64_t n = count("attribute", 12);
    if (tag == 0 && n == 0) return;
    if (tag != 0x0C) fail("expected an attribute list");
    for (std::uint64_t a = 0; a < n; ++a) {
      name();
      const std::uint64_t type = be(4);
      const int ts = type_size(type);
      if (ts == 0 || (!v5_ && type > 6)) fail("an attribute has the unknown type " + std::to_string(type));
      const std::uint64_t m = count("attribute value", static_cast<std::uint64_t>(ts));
      skip(padded(m * static_cast<std::uint64_t>(ts)));
    }
  }
  void run() {
    if (!in_ || size_ < 4) return;
    unsigned char magic[4];
    in_.read(reinterpret_cast<char*>(magic), 4);
    if (!in_ || magic[0] != 'C' || magic[1] != 'D' || magic[2] != 'F') return;  // not classic
    if (magic[3] != 1 && magic[3] != 2 && magic[3] != 5) return;  // netCDF refuses it itself
    pos_ = 4;
    v5_ = magic[3] == 5;
    const int offset_bytes = magic[3] == 1 ? 4 : 8;
    const std::uint64_t numrecs = non_neg();
    // All ones: a "streaming" file whose record count netCDF derives from the file's size
    // (4294967295 records for a file cut short): estuary never writes one, and reads none.
    if (numrecs == (v5_ ? UINT64_MAX : 0xFFFFFFFFu))
      fail("the record count is the streaming marker (unknown number of records), which estuary does not read");
    // Dimensions: a name (at least 4 bytes) and a length.
    std::uint64_t tag = be(4);
    std::uint64_t n = count("dimension", v5_ ? 16 : 8);
    if (!(tag == 0 && n == 0)) {
      if (tag != 0x0A) fail("expected a dimension list");
      for (std::uint64_t d = 0; d < n; ++d) {
        name();
        dims_.push_back(non_neg());
        if (dims_.back() == 0) unlimited_ = static_cast<std::int64_t>(d);
      }
    }
    attributes();
    // Variables: name, dimension ids, attributes, type, size, begin.
    tag = be(4);
    n = count("variable", v5_ ? 48 : 24);
    if (tag == 0 && n == 0) return;
    if (tag != 0x0B) fail("expected a variable list");
    std::uint64_t record_bytes = 0, first_record = UINT64_MAX;
    struct Var {
      std::uint64_t begin, bytes;  // bytes: one record's for a record variable
      bool rec;
    };
    std::vector<Var> vars;
    for (std::uint64_t v = 0; v < n; ++v) {
      name();
      const std::uint64_t nd = count("dimension id", v5_ ? 8 : 4);
      // The bytes of one record of the variable: its type's size times its other dimensions
      // (computed here: the header's vsize may lie), saturated at 2^63.
      std::uint64_t dim0 = UINT64_MAX, elems = 1;
      for (std::uint64_t k = 0; k < nd; ++k) {
        const std::uint64_t id = non_neg();
        if (k == 0) dim0 = id;
        if (id >= dims_.size()) fail("a variable names dimension " + std::to_string(id) + " of " + std::to_string(dims_.size()));
        const std::uint64_t len = dims_[id];
        // Only the first dimension of a variable may be the record one (length 0); netCDF-C
        // divides by the others' product and stops with SIGFPE on such a file.
        if (k > 0 && len == 0) fail("the record dimension is not the first of a variable");
        if (k > 0 || len != 0) elems = len != 0 && elems > (std::uint64_t{1} << 63) / len ? (std::uint64_t{1} << 63) : elems * len;
      }
      attributes();
      const std::uint64_t type = be(4);
      const int ts = type_size(type);
      // An unknown type has no size (netCDF-C divides by it: SIGFPE); types 7-11 are CDF-5 only.
      if (ts == 0 || (!v5_ && type > 6)) fail("a variable has the unknown type " + std::to_string(type));
      non_neg();  // vsize
      const std::uint64_t begin = be(offset_bytes);
      const std::uint64_t bytes = elems > (std::uint64_t{1} << 60) ? (std::uint64_t{1} << 63) : elems * static_cast<std::uint64_t>(ts);
      const bool rec = unlimited_ >= 0 && dim0 == static_cast<std::uint64_t>(unlimited_) && ts > 0;
      if (rec) {
        record_bytes = std::min(record_bytes + bytes, std::uint64_t{1} << 63);
        first_record = std::min(first_record, begin);
      }
      vars.push_back({begin, bytes, rec});
    }
    // Records: numrecs of record_bytes each, from the first record variable on.
    const std::uint64_t room = first_record <= size_ ? size_ - first_record : 0;  // bytes for the records
    if (record_bytes > 0 && numrecs > room / record_bytes)
      truncated(std::to_string(numrecs) + " records of " + std::to_string(record_bytes) + " bytes, more than its " +
                std::to_string(size_) + " bytes hold");
    // The data's end. A record is the record variables' slices one after the other, each padded
    // to 4 bytes unless there is only one (netCDF's recsize); the counts fit the file (above), so
    // nothing here overflows.
    std::uint64_t nrec = 0, recsize = 0, end = 0;
    for (const Var& v : vars) nrec += v.rec ? 1 : 0;
    for (const Var& v : vars)
      if (v.rec) recsize += nrec == 1 ? v.bytes : padded(v.bytes);
    const std::uint64_t records = numrecs;
    for (const Var& v : vars) {
      if (v.bytes == 0 || (v.rec && records == 0)) continue;
      end = std::max(end, v.rec ? v.begin + (records - 1) * recsize + v.bytes : v.begin + v.bytes);
    }
    if (end > size_)
      truncated(std::to_string(end) + " bytes of data, the file has " + std::to_string(size_));
  }
  [[noreturn]] void truncated(const std::string& what) const {
    throw Error("the file is truncated: its header describes " + what, "file " + path_,
                "the file was cut short (a full disk, an interrupted copy or run): write or copy it again");
  }

  std::string path_;
  std::ifstream in_;
  std::uint64_t size_ = 0, pos_ = 0;
  bool v5_ = false;
  std::int64_t unlimited_ = -1;
  std::vector<std::uint64_t> dims_;  // the dimensions' lengths (0: the record dimension)  // the record dimension (length 0 in the header), if any
};

}  // namespace estuary::detail
