// The coupler's configuration: which fields move between which components, how often, with
// which transformations. Read from a YAML file (estuary's own format) or an OASIS3-MCT 4.0
// `namcouple` file; both give the same CouplingSetup, so a run set up either way behaves alike.
//
// Times are model seconds since the start of the run (OASIS's convention). A coupling's
// transformations run in OASIS's order whatever the order they are listed in:
//   source side:  LOCTRANS → CHECKIN → BLASOLD → (mapping: MAPPING or SCRIPR)
//   target side:  → CONSERV → BLASNEW → CHECKOUT
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "estuary/conserv.hpp"
#include "estuary/globalsum.hpp"
#include "estuary/remap.hpp"
#include "estuary/weightgen.hpp"  // StageSpec

namespace estuary {

// OASIS field status (namcouple line 1, last word). IGNORED and IGNOUT are OASIS's old names
// for EXPORTED and EXPOUT and are read as those.
enum class FieldStatus {
  exported,  // moved from the source component to the target component
  expout,    // moved, and both sides' values are also written to files (debugging)
  input,     // the target reads the field from a file; there is no source component
  output,    // the source writes the field to a file; there is no target component
};

// LOCTRANS: what the source sends at a coupling time from the puts since the previous one.
enum class LocTrans {
  instant,  // the value put at the coupling time (puts in between are ignored)
  accumul,  // the sum of the puts since the previous coupling time, this one included
  average,  // their mean
  t_min,    // their point-wise minimum
  t_max,    // their point-wise maximum
};

enum class Periodicity { periodic, regional };  // namcouple line 3: P or R

// One side's grid as a coupling names it (namcouple lines 2 and 3).
struct GridRef {
  std::string name;             // e.g. "torc" (refers to a grid the component defines)
  std::int64_t nx = 0, ny = 0;  // 0 when not given (YAML may leave them out)
  Periodicity periodicity = Periodicity::regional;
  int overlap = 0;              // overlapping longitude columns of a periodic grid
  bool operator==(const GridRef&) const = default;
};

// MAPPING: apply a weight file (SCRIP or ESMF layout).
struct MappingSpec {
  std::string file;
  RemapLocation location = RemapLocation::src;  // OASIS's default
  RemapOrder order = RemapOrder::bfb;           // "opt" is read as sum
  bool operator==(const MappingSpec&) const = default;
};

// SCRIPR: weights generated at set-up. OASIS's configuration line, e.g.
// "DISTWGT LR SCALAR LATLON 1 4", "BILINEAR LR SCALAR LATLON 1",
// "CONSERV LR SCALAR LATLON 1 FRACNNEI FIRST".
struct ScriprSpec {
  std::string method;        // DISTWGT, BILINEAR, BICUBIC, GAUSWGT, CONSERV, LOCCUNIF, LOCCDIST,
                             // LOCCGAUS (OASIS 5 runoff), SPMAP (YAC's, YAML only);
                             // OASIS's "*NF" variants are read as the method without NF and
                             // nearest_fill = false
  bool nearest_fill = true;  // targets the method leaves without links get the nearest unmasked
                             // source (OASIS's default; off with the *NF methods)
  std::string grid_type;     // LR, D, U
  std::string field_type;    // SCALAR
  std::string restriction;   // LATLON or LATITUDE
  int bins = 1;
  int neighbors = 4;         // DISTWGT, GAUSWGT, LOCC*: source (LOCC*: target) neighbours
  std::string normalization; // CONSERV only: FRACAREA, DESTAREA, FRACNNEI
  std::string order;         // CONSERV only: FIRST or SECOND
  double variance = 0.0;     // GAUSWGT, LOCCGAUS: OASIS's variance multiplier
  // SPMAP only (estuary::RunoffOptions): degrees, the weighting AVG|DIST and the scaling
  // FRACAREA|SRCAREA|INVTGTAREA|NONE.
  double spread_distance = 0.0;
  double max_search_distance = 0.0;
  std::string weighting;
  std::string scaling;
  std::string callback;      // CALLBACK only (YAML `name`): the weight function the target
                             // component registers (Component::register_weights)
  bool operator==(const ScriprSpec&) const = default;
  // Whether `neighbors` applies: DISTWGT, GAUSWGT and the LOCC* methods take a neighbour count.
  bool takes_neighbors() const;
};

// CONSERV: a global correction after the mapping (estuary::Conserv).
struct ConservSpec {
  ConservMode mode = ConservMode::global;
  // OASIS's "bfb" is read as gather, "opt" as lsum8; estuary's own names (gather, lsum8,
  // lsum16, ddpdd, reprosum) are accepted too. Default when absent: gather (OASIS: bfb).
  SumMethod method = SumMethod::gather;
  bool operator==(const ConservSpec&) const = default;
};

// BLASOLD (source, before the mapping) and BLASNEW (target, after it): x ← scale·x + add.
// OASIS's line "scale nterms" followed by nterms lines "CONSTANT value" (only CONSTANT terms
// are supported; as in OASIS3-MCT, the last one gives `add`).
struct BlasSpec {
  double scale = 1.0;
  double add = 0.0;
  bool operator==(const BlasSpec&) const = default;
};

// One coupling: a namcouple $STRINGS entry, or one item of the YAML list.
struct CouplingConfig {
  // Colon-separated lists on namcouple line 1 (multi-field coupling): fields at the same
  // position correspond. One name each for a single field.
  std::vector<std::string> src_fields, dst_fields;
  // Coupling period, seconds (> 0). A namcouple may give a negative period (OASIS reads it and
  // aborts only if a model uses the entry): estuary reads it too and refuses it at enddef if a
  // component defines one of its fields.
  double period = 0.0;
  std::string restart_file;     // namcouple line 1 field 6 (empty when absent)
  std::string input_file;       // INPUT/OUTPUT: the file read or written (empty otherwise)
  FieldStatus status = FieldStatus::exported;
  GridRef src_grid, dst_grid;
  double lag = 0.0;             // LAG=, seconds (may be negative, as in OASIS)
  int seq = 0;                  // SEQ= (accepted, not needed by estuary's scheduling)
  std::vector<std::string> transforms;  // names as listed, upper case: "LOCTRANS", "MAPPING", ...
  std::optional<LocTrans> loctrans;
  std::optional<MappingSpec> mapping;
  std::optional<ScriprSpec> scripr;
  // STACK / YAML interpolation: weights generated at set-up by estuary::stack_weights and cached
  // in rmp_<src>_to_<dst>_STACK.nc (empty: none). At most one of mapping, scripr and this.
  // YAML `interpolation: [conservative, {nnn: {n: 4}}, {fixed: {value: -999}}]`, or the namcouple
  // extension STACK, whose configuration line is "conservative | nnn n=4 | fixed value=-999".
  std::vector<StageSpec> interpolation;
  std::optional<ConservSpec> conserv;
  std::optional<BlasSpec> blasold, blasnew;
  bool checkin = false, checkout = false;
  // YAML only (namcouple has no such thing): the components on either side. Empty: found at
  // end of definition from which component defines the field.
  std::string src_component, dst_component;
  // Where it was read (for messages); not part of the comparison.
  std::string origin;  // "namcouple:42"
  int line() const;    // the line number at the end of `origin` (42); 0 when it has none
  bool operator==(const CouplingConfig& o) const;  // every member but `origin`
};

struct CouplingSetup {
  std::string path;          // the file read
  double runtime = 0.0;      // $RUNTIME, seconds (> 0)
  int log_level = 0;         // $NLOGPRT (first number)
  int timer_level = 0;       // $NLOGPRT (second number; a negative one is read as 0 with timeline on)
  int nfields = -1;          // $NFIELDS (-1 for YAML, which has none)
  bool no_restart = false;   // $NNOREST T: fields without a restart file start from zero
  std::string map_decomposition;  // $NMAPDEC (e.g. "decomp_1d"), accepted, recorded
  std::string weight_option;      // $NWGTOPT (e.g. "abort_on_bad_index"), accepted, recorded
  // Seconds a get (or a put waiting for its previous exchange) may wait before the run is
  // stopped as deadlocked. YAML "timeout"; namcouple has none: the default, which the
  // environment variable ESTUARY_COUPLE_TIMEOUT overrides in both cases.
  double timeout = 600.0;
  // YAML "schedule": the algorithm (p2p, butterfly, adaptive, ...) of the coupler's exchanges
  // within one component — mapping at src with bfb, the gather of the source values among the
  // source ranks; at dst with sum (opt), the partial sums among the destination ranks. The
  // exchange between the components is one P2P stage whatever it says (RemapOptions::
  // split_phase). Empty: ESTUARY_SCHEDULE, else p2p. namcouple has none: the environment's.
  std::string schedule;
  // Record the coupling timeline (docs/user-guide.md "Timeline (LUCIA)"): YAML "timeline: true";
  // namcouple: a negative second number of $NLOGPRT, as OASIS3-MCT turns LUCIA on. The
  // environment variable ESTUARY_TIMELINE=1 or 0 overrides both at enddef.
  bool timeline = false;
  // The run's start date ("YYYY-MM-DD hh:mm:ss") and CF calendar: the time axis of the
  // coupler's files (EXPOUT, OUTPUT) counts seconds since that date in that calendar. YAML
  // "start_date" and "calendar"; namcouple $INIDATE (YYYYMMDD) and $CALTYPE (0 noleap,
  // 1 standard, 30 360_day), which OASIS3-MCT no longer reads. Empty start_date: not given
  // (the files count from 2000-01-01 and say so).
  std::string start_date;
  std::string calendar = "standard";
  std::vector<CouplingConfig> couplings;
  // Notes for the log: obsolete namcouple blocks accepted and ignored, and the like.
  std::vector<std::string> notes;
  bool operator==(const CouplingSetup& o) const;  // runtime, levels, options and couplings
};

// Reads an OASIS3-MCT namcouple file. Throws estuary::Error naming the file and line and what
// was expected there.
CouplingSetup read_namcouple(const std::string& path);
// Reads estuary's YAML configuration (see docs/configuration.md). Errors name the file, line
// and key.
CouplingSetup read_coupling_yaml(const std::string& path);
// Either of the above: by extension (.yaml/.yml) or, otherwise, by content ("$" blocks).
CouplingSetup read_coupling_config(const std::string& path);

const char* name_of(FieldStatus s);  // "EXPORTED", ...
const char* name_of(LocTrans t);     // "INSTANT", ...

}  // namespace estuary
