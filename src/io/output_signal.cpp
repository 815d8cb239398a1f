// Output's shutdown paths: the SIGTERM handler (a flag read at output steps) and failures
// (a write error on a writer or server), agreed over the ranks so that every rank stops at the
// same point with the same message.
#include "io/output_impl.hpp"

namespace estuary::io {

namespace {

extern "C" void on_sigterm(int) { g_sigterm = 1; }

}  // namespace

void Output::Impl::install_handler() {
  if (!cfg.catch_sigterm) return;
  g_sigterm = 0;  // a signal handled by an earlier Output was acted upon there
  struct sigaction sa {};
  sa.sa_handler = on_sigterm;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, &old_action);
  handler_installed = true;
}

void Output::Impl::restore_handler() {
  if (handler_installed) sigaction(SIGTERM, &old_action, nullptr);
  handler_installed = false;
}

void Output::Impl::or_fail(const std::function<void()>& step) {
  try {
    estuary::detail::agree(xcomm, step);
  } catch (const std::exception& e) {
    if (failure.empty()) failure = e.what();
    throw;
  }
}

void Output::Impl::check_not_failed(const std::string& call) const {
  if (!failure.empty())
    throw Error("the output failed earlier: " + failure, call + " on " + where_rank(),
                "end the run; the records completed before the failure are in the files");
}

std::string Output::Impl::share_from_root(std::string text) const {
  int len = static_cast<int>(text.size());
  estuary::detail::check_mpi(MPI_Bcast(&len, 1, MPI_INT, 0, model_comm), "MPI_Bcast");
  text.resize(static_cast<std::size_t>(len));
  estuary::detail::check_mpi(MPI_Bcast(text.data(), len, MPI_CHAR, 0, model_comm), "MPI_Bcast");
  return text;
}

void Output::Impl::poll_server_error(bool block) {
  if (!server_mode || model_rank != 0 || !server_error.empty()) return;
  int flag = block ? 1 : 0;
  MPI_Status st;
  if (!block) MPI_Iprobe(server_xranks[0], kTagError, ctrl, &flag, &st);
  if (!flag) return;
  if (block) MPI_Probe(server_xranks[0], kTagError, ctrl, &st);
  int n = 0;
  MPI_Get_count(&st, MPI_CHAR, &n);
  server_error.assign(static_cast<std::size_t>(n), '\0');
  estuary::detail::check_mpi(
      MPI_Recv(server_error.data(), n, MPI_CHAR, server_xranks[0], kTagError, ctrl, MPI_STATUS_IGNORE), "MPI_Recv");
}

}  // namespace estuary::io
