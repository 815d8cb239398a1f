#include "estuary/schedule.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>

#include "common/mpi_util.hpp"
#include "estuary/error.hpp"
#include "estuary/settings.hpp"

namespace estuary {

// Built-in algorithms of other src/xfer files. They fill the map as it is built, on first use,
// so no static-initialisation order matters and no lock is taken twice.
void register_alltoall_schedules(std::map<std::string, ScheduleBuilder>& into);
void register_butterfly_schedules(std::map<std::string, ScheduleBuilder>& into);  // adaptive.cpp

namespace {

std::map<std::string, ScheduleBuilder>& registry() {
  static std::map<std::string, ScheduleBuilder> r = [] {
    std::map<std::string, ScheduleBuilder> m{{"p2p", p2p_schedule}};
    register_alltoall_schedules(m);
    register_butterfly_schedules(m);
    return m;
  }();
  return r;
}
std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}

Block block(Buffer b, const Segment& s) { return {b, s.offset, s.count, s.stride}; }

// Splits a message's element range [first, first + n) out of a segment list: used to pair the
// self-send with the self-receive, whose segments may be cut at different places.
void pair_copies(const PeerSegments& out, const PeerSegments& in, std::vector<Copy>& copies) {
  std::size_t i = 0, j = 0;
  std::int64_t used_i = 0, used_j = 0;
  while (i < out.segments.size() && j < in.segments.size()) {
    const Segment& a = out.segments[i];
    const Segment& b = in.segments[j];
    const std::int64_t n = std::min(a.count - used_i, b.count - used_j);
    copies.push_back({{Buffer::src, a.offset + used_i * a.stride, n, a.stride},
                      {Buffer::dst, b.offset + used_j * b.stride, n, b.stride}});
    used_i += n;
    used_j += n;
    if (used_i == a.count) { ++i; used_i = 0; }
    if (used_j == b.count) { ++j; used_j = 0; }
  }
}

}  // namespace

std::int64_t Message::count() const {
  std::int64_t n = 0;
  for (const Block& b : blocks) n += b.count;
  return n;
}

void register_schedule(const std::string& name, ScheduleBuilder builder) {
  std::lock_guard lock(registry_mutex());
  registry()[name] = std::move(builder);
}

std::vector<std::string> schedule_names() {
  std::lock_guard lock(registry_mutex());
  std::vector<std::string> names;
  for (const auto& [name, _] : registry()) names.push_back(name);
  return names;
}

Schedule make_schedule(const Plan& plan, std::string_view algorithm) {
  std::string name(algorithm);
  if (name.empty()) {
    name = Settings::get().schedule.value_or("p2p");
  }
  // The algorithm decides which stages and peers every rank exchanges with: a rank given
  // another one (an option or ESTUARY_SCHEDULE set on some ranks only) would hang its peers.
  detail::agree_same(plan.comm(), "schedule algorithm (RedistOptions::algorithm or ESTUARY_SCHEDULE)", name);
  ScheduleBuilder builder;
  {
    std::lock_guard lock(registry_mutex());
    auto it = registry().find(name);
    if (it != registry().end()) builder = it->second;
  }
  if (!builder) {
    std::string known;
    for (const auto& n : schedule_names()) known += (known.empty() ? "" : ", ") + n;
    throw Error("unknown schedule algorithm '" + name + "'",
                "rank " + std::to_string(plan.rank()), "known algorithms: " + known);
  }
  Schedule s = builder(plan);
  s.algorithm = name;
  return s;
}

Schedule p2p_schedule(const Plan& plan) {
  Schedule s;
  s.algorithm = "p2p";
  s.src_size = plan.src_size();
  s.dst_size = plan.dst_size();
  s.fill_value = plan.options().fill_value;
  Stage stage;
  const PeerSegments* self_send = nullptr;
  const PeerSegments* self_recv = nullptr;
  for (const PeerSegments& ps : plan.sends()) {
    if (ps.peer == plan.rank()) { self_send = &ps; continue; }
    Message m{ps.peer, {}};
    m.blocks.reserve(ps.segments.size());  // scattered plans have millions of segments
    for (const Segment& seg : ps.segments) m.blocks.push_back(block(Buffer::src, seg));
    stage.sends.push_back(std::move(m));
  }
  for (const PeerSegments& ps : plan.recvs()) {
    if (ps.peer == plan.rank()) { self_recv = &ps; continue; }
    Message m{ps.peer, {}};
    m.blocks.reserve(ps.segments.size());
    for (const Segment& seg : ps.segments) m.blocks.push_back(block(Buffer::dst, seg));
    stage.recvs.push_back(std::move(m));
  }
  if (self_send && self_recv) pair_copies(*self_send, *self_recv, stage.copies);
  for (const Segment& seg : plan.missing()) s.fills.push_back(block(Buffer::dst, seg));
  s.stages.push_back(std::move(stage));
  return s;
}

ScheduleStats Schedule::stats() const {
  ScheduleStats st;
  st.stages = static_cast<int>(stages.size());
  for (const Stage& stage : stages) {
    for (const Message& m : stage.sends) {
      const std::int64_t n = m.count();
      ++st.messages_sent;
      st.elements_sent += n;
      st.largest_message = std::max(st.largest_message, n);
      st.smallest_message = st.messages_sent == 1 ? n : std::min(st.smallest_message, n);
    }
    for (const Message& m : stage.recvs) {
      ++st.messages_received;
      st.elements_received += m.count();
    }
    for (const Copy& c : stage.copies) st.elements_copied += c.from.count;
  }
  return st;
}

std::string Schedule::describe() const {
  static const char* names[] = {"src", "dst", "tmp"};
  std::ostringstream o;
  const ScheduleStats st = stats();
  o << "schedule " << algorithm << ": " << st.stages << " stage(s), " << st.messages_sent
    << " send(s) of " << st.elements_sent << " elements, " << st.messages_received
    << " receive(s) of " << st.elements_received << ", " << st.elements_copied
    << " copied locally, tmp " << tmp_size << ", fills " << fills.size() << "\n";
  for (std::size_t k = 0; k < stages.size(); ++k) {
    const Stage& stage = stages[k];
    for (const Message& m : stage.sends)
      o << "  stage " << k << " send to " << m.peer << ": " << m.count() << " elements in "
        << m.blocks.size() << " block(s) from "
        << (m.blocks.empty() ? "-" : names[static_cast<int>(m.blocks[0].buffer)]) << "\n";
    for (const Message& m : stage.recvs)
      o << "  stage " << k << " recv from " << m.peer << ": " << m.count() << " elements in "
        << m.blocks.size() << " block(s) into "
        << (m.blocks.empty() ? "-" : names[static_cast<int>(m.blocks[0].buffer)]) << "\n";
    if (!stage.copies.empty())
      o << "  stage " << k << " local copies: " << stage.copies.size() << "\n";
  }
  return o.str();
}

}  // namespace estuary
