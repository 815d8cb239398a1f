// Server mode: the loop on the dedicated writer ranks, following model rank 0's control messages.
#include "io/output_impl.hpp"

namespace estuary::io {

void Output::Impl::serve_loop() {
  const int root = 0;  // model rank 0 is xcomm rank 0 (servers are the last ranks)
  auto failed = [&](const std::exception& e) {
    server_error = e.what();
    if (windex != 0) return;
    error_sent = server_error.substr(0, 4000);
    estuary::detail::check_mpi(MPI_Isend(error_sent.data(), static_cast<int>(error_sent.size()), MPI_CHAR, root,
                                         kTagError, ctrl, &error_request),
                               "MPI_Isend");
  };
  for (;;) {
    Ctrl c;
    estuary::detail::check_mpi(MPI_Recv(&c, sizeof c, MPI_BYTE, root, kTagCtrl, ctrl, MPI_STATUS_IGNORE), "MPI_Recv");
    if (c.kind == kRecord) {
      Var& v = vars[static_cast<std::size_t>(c.var)];
      Transfer& tr = transfers[static_cast<std::size_t>(v.transfer)];
      const double t0 = MPI_Wtime();
      tr.slots[static_cast<std::size_t>(c.slot)].run(
          {Field(Type::f64, nullptr, 0, tr.slab.data(), static_cast<i64>(tr.slab.size()))});
      if (v.transfer2 >= 0) {  // interpolated levels: the upper levels' values, same slot
        Transfer& up = transfers[static_cast<std::size_t>(v.transfer2)];
        up.slots[static_cast<std::size_t>(c.slot)].run(
            {Field(Type::f64, nullptr, 0, up.slab.data(), static_cast<i64>(up.slab.size()))});
      }
      stats.transfer_s += MPI_Wtime() - t0;
      if (server_error.empty()) {
        try {
          on_writers([&] { write_record(v, c.record, c.time, c.tb0, c.tb1); });
        } catch (const std::exception& e) {
          failed(e);
        }
      }
    } else {
      try {
        if (c.kind == kFlush && server_error.empty()) sync_files();
        if (c.kind == kClose) close_files(c.fault != 0 || !server_error.empty());
      } catch (const std::exception& e) {
        if (server_error.empty()) failed(e);
      }
      const int ack = server_error.empty() ? 1 : 0;
      estuary::detail::check_mpi(MPI_Send(&ack, 1, MPI_INT, root, kTagAck, ctrl), "MPI_Send");
      if (c.kind == kClose) {
        // Model rank 0 receives the error text once it sees a 0 acknowledgement.
        if (error_request != MPI_REQUEST_NULL) MPI_Wait(&error_request, MPI_STATUS_IGNORE);
        return;
      }
    }
  }
}

}  // namespace estuary::io
