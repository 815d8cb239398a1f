// Fault injection for the I/O part's fault suite: a writer whose chosen record fails as a full
// disk would. The failure comes after the real (collective) write, as a failed MPI-IO or POSIX
// write returns from inside the library, so the writers stay in step.
#include <cstdio>
#include <cstdlib>

#include "estuary/error.hpp"
#include "estuary/settings.hpp"
#include "io/io_detail.hpp"

namespace estuary::io::detail {
namespace {

class FaultyWriter final : public FileWriter {
 public:
  FaultyWriter(std::unique_ptr<FileWriter> w, i64 record) : w_(std::move(w)), record_(record) { path_ = w_->path(); }
  int def_dim(const std::string& name, i64 len) override { return w_->def_dim(name, len); }
  int def_var(const std::string& name, bool dbl, const std::vector<int>& dims) override {
    return w_->def_var(name, dbl, dims);
  }
  void put_att(int var, const std::string& name, const std::string& text) override { w_->put_att(var, name, text); }
  void put_att(int var, const std::string& name, const std::vector<double>& values, bool as_float) override {
    w_->put_att(var, name, values, as_float);
  }
  void def_deflate(int var, int level, const std::vector<i64>& chunk) override { w_->def_deflate(var, level, chunk); }
  void def_zstd(int var, int level, const std::vector<i64>& chunk, const std::string& name) override {
    w_->def_zstd(var, level, chunk, name);
  }
  void def_quantize(int var, int mode, int significant) override { w_->def_quantize(var, mode, significant); }
  void enddef() override { w_->enddef(); }
  void put(int var, i64 record, const std::vector<Box>& boxes, const double* data) override {
    w_->put(var, record, boxes, data);
    if (record == record_)
      throw Error("No space left on device (injected by ESTUARY_IO_FAULT)",
                  "file " + path_ + ", record " + std::to_string(record));
  }
  void put_record(i64 record, const std::vector<Put>& puts) override {
    w_->put_record(record, puts);
    if (record == record_ && !puts.empty())
      throw Error("No space left on device (injected by ESTUARY_IO_FAULT)",
                  "file " + path_ + ", record " + std::to_string(record) + ", " + puts.front().name);
  }
  void sync() override { w_->sync(); }
  void prepare_record(i64 record) override { w_->prepare_record(record); }
  void commit_records(i64 n) override { w_->commit_records(n); }
  bool classic() const override { return w_->classic(); }
  void close() override { w_->close(); }

 private:
  std::unique_ptr<FileWriter> w_;
  i64 record_;
};

}  // namespace

std::unique_ptr<FileWriter> with_fault_injection(std::unique_ptr<FileWriter> w, int writer) {
  const std::optional<std::string>& setting = Settings::get().io_fault;
  if (!setting) return w;
  const char* env = setting->c_str();
  long long record = -1;
  int at = 0;
  if (std::sscanf(env, "record=%lld,writer=%d", &record, &at) < 1 || record < 0)
    throw Error(std::string("ESTUARY_IO_FAULT='") + env + "' is not record=R[,writer=W]", "environment");
  if (at != writer) return w;
  return std::make_unique<FaultyWriter>(std::move(w), record);
}

}  // namespace estuary::io::detail
