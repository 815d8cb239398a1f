// CONSERV — the global conservation corrections OASIS3-MCT applies after a mapping (paper 000,
// Sect. 2.4), with the global sums of estuary::global_sum.
//
// Notation (as in OASIS3-MCT's oasis_advance_map): a point is valid where its mask is nonzero
// (every point when no mask is given); only valid points count and only valid destination
// points are changed.
//   Ss = Σ src·area over valid source points       As = Σ area over valid source points
//   Sd = Σ dst·area over valid destination points  Ad = Σ area over valid destination points
//  GLOBAL  dst ← dst − (Sd − Ss)/Ad                  afterwards Σ dst·area = Ss
//  GLBPOS  dst ← dst · Ss/Sd                         the same, multiplicative (keeps signs)
//  BASBAL  dst ← dst − (Sd − Ss·Ad/As)/Ad            afterwards Σ dst·area / Ad = Ss / As
//  BASPOS  dst ← dst · (Ss/Sd)·(Ad/As)               the same, multiplicative
// BASBAL/BASPOS thus conserve the area mean over the non-masked ("sea") areas: the integral,
// scaled by the ratio of the non-masked areas — which is the integral itself when they agree.
// GLBPOS/BASPOS leave the field unchanged when Sd = Ss = 0 and throw when only Sd = 0; GLOBAL
// throws when Ad = 0, BASBAL when Ad or As is 0 (OASIS aborts in these cases).
//
// Reproducibility: the integrals are global sums of the products value·area of single points,
// with the chosen SumMethod; the corrections are one scalar per field, the same on every rank.
// With gather (ordered by global index) or reprosum, and a destination field that is itself
// bit-identical (Remap order bfb), the corrected field is bit-identical for any rank count and
// decomposition. Each side's decompositions must together hold every point at most once (no
// halos or repeated points: they would be counted twice; gather rejects them).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "estuary/decomp.hpp"
#include "estuary/globalsum.hpp"
#include "estuary/remap.hpp"

namespace estuary {

enum class ConservMode { global, glbpos, basbal, baspos };

// "GLOBAL", "GLBPOS", "BASBAL", "BASPOS" (the OASIS namcouple names).
const char* name_of(ConservMode m);
// The inverse of name_of (case-insensitive; estuary/names.hpp). Unknown names throw estuary::Error.
template <>
ConservMode from_name<ConservMode>(std::string_view name);
// The older spelling of from_name<ConservMode>.
inline ConservMode conserv_mode_by_name(std::string_view name) { return from_name<ConservMode>(name); }

// One side of a mapping for CONSERV: the local points (a Decomp of the grid's numbering), their
// cell areas and optional mask (1 valid, 0 masked; empty: every point valid), in local order.
struct ConservSide {
  const Decomp* decomp = nullptr;
  std::span<const double> area;
  std::span<const std::int32_t> mask;
};

class Conserv {
 public:
  // Collective. Sums the valid areas of both sides (As, Ad) once, with `method`.
  Conserv(const ConservSide& src, const ConservSide& dst, MPI_Comm comm, SumMethod method);
  ~Conserv();
  Conserv(Conserv&&) noexcept;
  Conserv& operator=(Conserv&&) noexcept;

  // Collective. Corrects every field's dst in place (fields as Remap::run takes them: src with
  // the source side's local size, dst with the destination side's). The integrals of all the
  // fields are formed with one global_sums call per side (gather) or one for both (others).
  void apply(ConservMode mode, std::span<const RemapField> fields);
  void apply(ConservMode mode, std::span<const double> src, std::span<double> dst);

  // Collective. The integrals Σ value·area over valid points: (Ss, Sd) of each field, in the
  // order of `fields`, with the method of this Conserv (for diagnostics and tests).
  std::vector<std::pair<double, double>> integrals(std::span<const RemapField> fields);

  // Split-phase form, for coupling, where the source and destination ranks reach the
  // correction at different times (As and Ad were summed at construction, over `comm`).
  // source_integrals: collective over src_comm (the ranks holding source points); Ss of each
  // field. correct: collective over dst_comm (the ranks holding destination points); forms Sd
  // and corrects each dst in place with the Ss given. Together they equal apply().
  std::vector<double> source_integrals(std::span<const std::span<const double>> src, MPI_Comm src_comm);
  void correct(ConservMode mode, std::span<const double> ss, std::span<const std::span<double>> dst,
               MPI_Comm dst_comm);
  double src_area() const;  // As
  double dst_area() const;  // Ad
  SumMethod method() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One-shot form: builds a Conserv and applies it to one field.
void conserv(ConservMode mode, const ConservSide& src, std::span<const double> src_field,
             const ConservSide& dst, std::span<double> dst_field, MPI_Comm comm, SumMethod method);

}  // namespace estuary
