// Global sums of distributed double fields, as CONSERV needs them (paper 000, Sect. 2.4): five
// methods that trade speed against accuracy and reproducibility across process counts.
//
// Notation for the error bounds: S is the exact sum of the N values on all P ranks, Σ|x| the
// sum of their magnitudes, n the largest count on one rank, u = 2^-53 (half an ulp of 1.0),
// eps = 2^-52. Bounds hold for finite values whose partial sums do not overflow.
//
//  gather    Every value goes to rank 0, which adds them one by one in global-index order (or,
//            without global indices, rank by rank in local order) and broadcasts the sums.
//            |result − S| ≤ (N − 1)·u·Σ|x| (to first order in u). With global indices the
//            result is bit-identical for any process count and decomposition. Cost: O(N) memory
//            and work on rank 0.
//  lsum8     Local double sums (eight interleaved lanes), then MPI_Allreduce(MPI_SUM).
//            |result − S| ≤ N·eps·Σ|x|. Bit-identical only for the same decomposition (and the
//            same MPI reduction order). The fastest.
//  lsum16    Local sums in IEEE binary128 (GCC/Clang __float128, 113-bit significand, software
//            arithmetic; long double where that is binary128, e.g. AArch64), reduced with a
//            custom MPI op over the quad values, rounded to double once at the end.
//            |result − S| ≤ u·|S| + 1.01·(n + P + 3)·2^-113·Σ|x|.
//  ddpdd     Double-double sums (He & Ding 2001): each value is added with TwoSum into one of
//            eight (hi, lo) lanes, which are combined, and the pairs are reduced with one
//            MPI_Allreduce and a custom op that adds double-doubles.
//            |result − S| ≤ u·|S| + 8·(n + P + 8)·u²·Σ|x| (adding a double costs at most 2u²
//            of the partial sum — Joldes, Muller & Popescu 2017 — and combining two pairs a few
//            u² of their magnitudes).
//  reprosum  Fixed-point integers (after Mirin & Worley 2012): each value is split exactly into
//            32-bit digits of one fixed grid anchored at 2^-1074 and summed locally as int64;
//            reduction 1 (MPI_MAX) finds the highest and lowest digit in use (the global
//            exponent range) and any Inf/NaN, reduction 2 (MPI_SUM on int64) adds just those
//            digits. The integer sum is exact, so after carrying, the result is S rounded to
//            nearest (ties to even): |result − S| ≤ u·|S|, bit-identical for any process count,
//            decomposition and ordering. Unlike Mirin & Worley nothing is truncated, so there
//            is no rare non-reproducible case. Locally, blocks of values are summed exactly in
//            floating-point bins (SIMD; AVX2 where the CPU has it, ESTUARY_SIMD=generic forces
//            the portable kernel — the result cannot differ).
//
// Non-finite values: NaN anywhere, or both +Inf and −Inf, give NaN; otherwise an infinity gives
// that infinity (reprosum and gather exactly so; the others follow floating-point arithmetic,
// where ddpdd may turn an infinity into NaN). A finite exact sum beyond the double range gives
// ±Inf. An exactly zero sum is +0.0 for reprosum.
#pragma once

#include <mpi.h>

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

#include "estuary/names.hpp"

namespace estuary {

enum class SumMethod { gather, lsum8, lsum16, ddpdd, reprosum };

inline constexpr std::array<SumMethod, 5> sum_methods{SumMethod::gather, SumMethod::lsum8,
                                                      SumMethod::lsum16, SumMethod::ddpdd,
                                                      SumMethod::reprosum};

// "gather", "lsum8", "lsum16", "ddpdd", "reprosum" (the OASIS3-MCT 4.0 CONSERV names).
const char* name_of(SumMethod m);
// The inverse of name_of (estuary/names.hpp). Unknown names throw estuary::Error listing the known ones.
template <>
SumMethod from_name<SumMethod>(std::string_view name);
// The older spelling of from_name<SumMethod>.
inline SumMethod sum_method_by_name(std::string_view name) { return from_name<SumMethod>(name); }

// The sum over all ranks of comm of `local`, on every rank. Collective.
// `global_index` (optional, gather only, ignored by the other methods): the global index of each
// local value; gather then adds in ascending global index, so the result does not depend on the
// decomposition. Indices must be unique across ranks (duplicates throw, naming the index and
// ranks); when given, it must be given on every rank that has values, with their count.
double global_sum(std::span<const double> local, MPI_Comm comm, SumMethod m,
                  std::span<const std::int64_t> global_index = {});

// out[f] = global_sum(fields[f], ...) for every field, with one reduction (gather: one gather)
// for all of them, as OASIS sums the fields of a bundle. Every rank passes the same number of
// fields; their lengths may differ between fields and ranks except that with `global_index`
// every field has its length. out.size() must equal fields.size(). For gather and reprosum,
// out[f] is bit-identical to the single-field result; for the others it can differ in the last
// bits only when the MPI library reduces a longer vector in another order.
void global_sums(std::span<const std::span<const double>> fields, std::span<double> out,
                 MPI_Comm comm, SumMethod m, std::span<const std::int64_t> global_index = {});

}  // namespace estuary
