#include "estuary/redist.hpp"

#include "estuary/error.hpp"

namespace estuary {

Redist::Redist(const Decomp& src, const Decomp& dst, MPI_Comm comm, RedistOptions options)
    : Redist(Plan(src, dst, comm, options.plan), std::move(options.algorithm)) {}

Redist::Redist(Plan plan, std::string algorithm)
    : algorithm_(std::move(algorithm)),
      plan_(std::move(plan)),
      schedule_(std::make_shared<const Schedule>(make_schedule(plan_, algorithm_))) {}

Redist Redist::reverse() const { return Redist(plan_.transposed(), algorithm_); }

Exchange& Redist::exchange_for(std::span<const Field> fields) {
  std::vector<Type> types;
  for (const Field& f : fields) types.push_back(f.type);
  return prepare(std::move(types));
}

Exchange& Redist::prepare(std::vector<Type> types) {
  auto it = exchanges_.find(types);
  if (it == exchanges_.end())
    it = exchanges_.emplace(types, Exchange(schedule_, plan_.comm(), types)).first;
  return it->second;
}

void Redist::run(std::span<const Field> fields) {
  if (in_flight_)
    throw Error("run() called while an exchange is in flight",
                "rank " + std::to_string(plan_.rank()), "call finish() first");
  exchange_for(fields).run(fields);  // run(): sends may go straight from the source
}

void Redist::start(std::span<const Field> fields) {
  if (in_flight_)
    throw Error("start() called while an exchange is in flight",
                "rank " + std::to_string(plan_.rank()), "call finish() first");
  Exchange& ex = exchange_for(fields);
  ex.start(fields);
  in_flight_ = &ex;
}

void Redist::finish() {
  if (!in_flight_)
    throw Error("finish() called with no exchange in flight",
                "rank " + std::to_string(plan_.rank()), "call start() first");
  Exchange* ex = in_flight_;
  in_flight_ = nullptr;
  ex->finish();
}

Exchange Redist::make_exchange(std::vector<Type> types) const {
  return Exchange(schedule_, plan_.comm(), std::move(types));
}

}  // namespace estuary
