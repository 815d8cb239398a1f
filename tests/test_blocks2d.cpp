// Issue 24: the 2-D block kinds (rows2d, cols2d, colblocks on an nx x ny grid) against a
// brute-force serial construction, and the exchanges between them — in particular the
// zero-copy path (a one-field message that is one contiguous piece of the user's array goes
// straight from or into it) — against values computed from each destination's global index,
// with and without zero-copy, on uneven grids where some rank owns nothing.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "estuary/decomp_gen.hpp"
#include "estuary/error.hpp"
#include "estuary/redist.hpp"
#include "estuary/settings.hpp"
#include "mpi_test_util.hpp"

using estuary::Decomp;
using estuary::Field;
using estuary::Redist;
using estuary::RedistOptions;
using etest::i64;
namespace gen = estuary::gen;

namespace {

// The grids: even, uneven, thinner than the rank count in either direction, empty.
const std::vector<std::pair<i64, i64>> kGrids = {{8, 6}, {7, 5}, {13, 11}, {3, 2}, {1, 9}, {9, 1}, {2, 3}, {0, 4}, {5, 0}};

// Which of `parts` even pieces of [0, n) holds i: the piece k with k*n/parts <= i < (k+1)*n/parts,
// found by walking, not by dividing.
int piece_of(i64 i, i64 n, int parts) {
  for (int k = 0; k < parts; ++k)
    if (i < (static_cast<i64>(k) + 1) * n / parts) return k;
  return parts - 1;
}

// Brute force: the owner of every grid point, then each rank's points in the kind's local order.
std::vector<std::vector<i64>> brute(const std::string& kind, i64 nx, i64 ny, int p) {
  int prow = 1;
  for (int d = 1; d * d <= p; ++d)
    if (p % d == 0) prow = d;
  const int pcol = p / prow;
  std::vector<std::vector<i64>> out(static_cast<std::size_t>(p));
  for (i64 i = 0; i < nx; ++i)
    for (i64 j = 0; j < ny; ++j) {
      int owner = 0;
      if (kind == "rows2d") owner = piece_of(i, nx, p);
      else if (kind == "cols2d") owner = piece_of(j, ny, p);
      else owner = piece_of(j, ny, pcol) * prow + piece_of(i, nx, prow);  // down the block columns
      out[static_cast<std::size_t>(owner)].push_back(i * ny + j);         // row by row
    }
  return out;
}

template <class T>
std::vector<T> source_values(const Decomp& d, int salt) {
  std::vector<T> v;
  for (i64 g : d.to_indices()) v.push_back(etest::value<T>(g, salt));
  return v;
}

// Moves `fields` fields of T from src to dst with `algorithm` and checks every destination
// element bit for bit; returns the zero-copy receives of one run and the schedule's receives
// and sends (this rank).
template <class T>
bool move_and_check(const Decomp& src, const Decomp& dst, int fields, const std::string& algorithm,
                    const std::string& what, i64& zc_recvs, i64& peer_recvs, i64& peer_sends,
                    const etest::Case* c = nullptr) {
  std::ostringstream why;
  bool ok = true;
  try {
    RedistOptions opt;
    opt.algorithm = algorithm;
    if (c) opt.plan = c->options;
    Redist rd(src, dst, MPI_COMM_WORLD, opt);
    std::vector<std::vector<T>> a, b;
    std::vector<Field> fl;
    for (int f = 0; f < fields; ++f) {
      a.push_back(source_values<T>(src, f));
      b.emplace_back(static_cast<std::size_t>(dst.size()) + 1, static_cast<T>(-77));  // one guard
    }
    for (int f = 0; f < fields; ++f)
      fl.emplace_back(estuary::type_of<T>(), a[static_cast<std::size_t>(f)].data(), src.size(),
                      b[static_cast<std::size_t>(f)].data(), dst.size());
    estuary::Exchange ex = rd.make_exchange(std::vector<estuary::Type>(static_cast<std::size_t>(fields), estuary::type_of<T>()));
    for (int run = 0; run < 2; ++run) ex.run(fl);  // the second run reposts on the same arrays
    zc_recvs = ex.timers().zero_copy_recvs / 2;
    peer_recvs = peer_sends = 0;
    for (const estuary::Stage& s : ex.schedule().stages) {
      peer_recvs += static_cast<i64>(s.recvs.size());
      peer_sends += static_cast<i64>(s.sends.size());
    }
    const std::vector<i64> didx = dst.to_indices();
    for (int f = 0; f < fields && ok; ++f) {
      const std::vector<T>& got = b[static_cast<std::size_t>(f)];
      for (std::size_t k = 0; k < didx.size(); ++k) {
        const bool has = !c || !c->covered || c->covered(didx[k]);
        const T want = has ? etest::value<T>(didx[k], f) : static_cast<T>(c->options.fill_value);
        if (!etest::same_bits(got[k], want)) {
          why << "field " << f << " dst[" << k << "] (index " << didx[k] << ") = " << +got[k] << ", want " << +want;
          ok = false;
          break;
        }
      }
      if (ok && !etest::same_bits(got.back(), static_cast<T>(-77))) {
        why << "field " << f << ": write past the end";
        ok = false;
      }
    }
  } catch (const std::exception& e) {
    why << "threw: " << e.what();
    ok = false;
  }
  EXPECT_TRUE(ok) << what << " [" << algorithm << "] on rank " << etest::world_rank() << ": " << why.str();
  return ok;
}

// ESTUARY_ZERO_COPY for the scope of one test.
struct ZeroCopy {
  explicit ZeroCopy(bool on) {
    if (on) unsetenv("ESTUARY_ZERO_COPY");
    else setenv("ESTUARY_ZERO_COPY", "0", 1);
    estuary::Settings::reload();
  }
  ~ZeroCopy() {
    unsetenv("ESTUARY_ZERO_COPY");
    estuary::Settings::reload();
  }
};

// ESTUARY_DATATYPE_MIN_RUN for the scope of one test (nullptr: unset, the default).
struct MinRun {
  explicit MinRun(const char* bytes) {
    if (bytes) setenv("ESTUARY_DATATYPE_MIN_RUN", bytes, 1);
    else unsetenv("ESTUARY_DATATYPE_MIN_RUN");
    estuary::Settings::reload();
  }
  ~MinRun() {
    unsetenv("ESTUARY_DATATYPE_MIN_RUN");
    estuary::Settings::reload();
  }
};

}  // namespace

TEST(Blocks2d, KindsMatchBruteForce) {
  // Serial: every rank checks every rank count from 1 to 9 on its own.
  for (auto [nx, ny] : kGrids)
    for (int p = 1; p <= 9; ++p)
      for (const std::string kind : {"rows2d", "cols2d", "colblocks"}) {
        const auto want = brute(kind, nx, ny, p);
        for (int r = 0; r < p; ++r) {
          const Decomp d = kind == "rows2d" ? gen::rows2d(nx, ny, r, p)
                           : kind == "cols2d" ? gen::cols2d(nx, ny, r, p)
                                              : gen::colblocks(nx, ny, r, p);
          EXPECT_EQ(d.global_size(), nx * ny);
          EXPECT_EQ(d.to_indices(), want[static_cast<std::size_t>(r)])
              << kind << " " << nx << "x" << ny << " rank " << r << " of " << p;
          // The names reach the same decompositions; transpose2d is cols2d.
          const std::string name = kind == "cols2d" ? "transpose2d" : kind;
          EXPECT_EQ(gen::from_name(name, nx, ny, r, p).to_indices(), want[static_cast<std::size_t>(r)]);
        }
      }
  // The n form lies on grid_shape(n): 10^7 is 3125 x 3200, as in YAXT's measurement.
  i64 nx = 0, ny = 0;
  gen::grid_shape(10000000, nx, ny);
  EXPECT_EQ(nx, 3125);
  EXPECT_EQ(ny, 3200);
  EXPECT_EQ(gen::colblocks(7 * 5, 3, 4).to_indices(), gen::colblocks(5, 7, 3, 4).to_indices());
  EXPECT_EQ(gen::from_name("colblocks", 35, 1, 4).to_indices(), brute("colblocks", 5, 7, 4)[1]);
  int prow = 0, pcol = 0;
  gen::block_grid(8, prow, pcol);
  EXPECT_EQ(prow * 10 + pcol, 24);
  EXPECT_THROW(gen::colblocks(-1, 3, 0, 1), estuary::Error);
  EXPECT_THROW(gen::from_name("colblock", 4, 4, 0, 1), estuary::Error);
}

TEST(Blocks2d, RowsToColumnBlocksZeroCopy) {
  // rows2d -> colblocks and back, one field (zero-copy where a message is one piece of the
  // user's array) and three (packed), doubles and floats (a float message of odd length has no
  // padding on the wire), with zero-copy on and off.
  const int p = etest::world_size(), r = etest::world_rank();
  for (bool zero_copy : {true, false}) {
    ZeroCopy zc(zero_copy);
    for (auto [nx, ny] : kGrids) {
      const std::string at = std::to_string(nx) + "x" + std::to_string(ny) + (zero_copy ? "" : " ESTUARY_ZERO_COPY=0");
      const Decomp rows = gen::rows2d(nx, ny, r, p), blocks = gen::colblocks(nx, ny, r, p);
      for (int fields : {1, 3}) {
        i64 zr = 0, pr = 0, ps = 0;
        bool ok = move_and_check<double>(rows, blocks, fields, "p2p", "rows2d->colblocks " + at, zr, pr, ps);
        // Each block row takes whole rows of the block from a source: one piece of the block.
        if (zero_copy && fields == 1) EXPECT_EQ(zr, pr) << at << " rank " << r;
        else EXPECT_EQ(zr, 0) << at;
        ok = move_and_check<float>(rows, blocks, fields, "p2p", "rows2d->colblocks float " + at, zr, pr, ps) && ok;
        // Back: the block's rows are strided in the row strip (packed on both sides).
        ok = move_and_check<double>(blocks, rows, fields, "p2p", "colblocks->rows2d " + at, zr, pr, ps) && ok;
        ok = move_and_check<float>(blocks, rows, fields, "p2p", "colblocks->rows2d float " + at, zr, pr, ps) && ok;
        EXPECT_TRUE(etest::all_ok(ok)) << at << " fields " << fields;
      }
    }
  }
}

TEST(Blocks2d, EveryPairAndAlgorithmOneField) {
  // The single-field exchanges of every test pair under every algorithm: staged schedules
  // (butterfly, ring) receive into and forward from the destination and tmp buffers, where
  // zero-copy must stay off; p2p takes it wherever a message is one contiguous piece.
  const int p = etest::world_size(), r = etest::world_rank();
  std::vector<etest::Case> cases = etest::all_cases(p, r);
  for (auto [nx, ny] : kGrids) {
    cases.push_back({"block->colblocks", gen::block(nx * ny, r, p), gen::colblocks(nx, ny, r, p)});
    cases.push_back({"colblocks->cyclic", gen::colblocks(nx, ny, r, p), gen::cyclic(nx * ny, r, p)});
    cases.push_back({"cols2d->colblocks", gen::cols2d(nx, ny, r, p), gen::colblocks(nx, ny, r, p)});
  }
  std::vector<std::string> algs;
  for (const std::string& a : estuary::schedule_names())
    if (a != "adaptive" && a != "auto") algs.push_back(a);  // tuned ones time trial runs: test_redist has them
  for (std::size_t a = 0; a < algs.size(); ++a)
    for (std::size_t i = 0; i < cases.size(); ++i) {
      if ((i + a) % 3 != 0 && algs[a] != "p2p") continue;
      i64 zr, pr, ps;
      const bool ok = move_and_check<double>(cases[i].src, cases[i].dst, 1, algs[a], cases[i].name, zr, pr, ps, &cases[i]);
      EXPECT_TRUE(etest::all_ok(ok)) << cases[i].name << " [" << algs[a] << "]";
    }
}

TEST(Blocks2d, BlockToCyclicInterleavedPack) {
  // block -> cyclic: every send and the local copy are one block of the source at stride p,
  // packed in one interleaved pass (ExchangeTimers::interleaved_packs); uneven n, 1 and 3
  // fields, double and float, and the plain pack path (ESTUARY_ZERO_COPY=0) alike.
  const int p = etest::world_size(), r = etest::world_rank();
  for (bool fast : {true, false}) {
    ZeroCopy zc(fast);
    for (i64 n : {5, 1000, 4099}) {
      const std::string at = "n=" + std::to_string(n) + (fast ? "" : " ESTUARY_ZERO_COPY=0");
      const Decomp src = gen::block(n, r, p), dst = gen::cyclic(n, r, p);
      for (int fields : {1, 3}) {
        i64 zr, pr, ps;
        bool ok = move_and_check<double>(src, dst, fields, "p2p", "block->cyclic " + at, zr, pr, ps);
        ok = move_and_check<float>(src, dst, fields, "p2p", "block->cyclic float " + at, zr, pr, ps) && ok;
        EXPECT_TRUE(etest::all_ok(ok)) << at << " fields " << fields;
        // Which path ran: woven where every strand has two elements or more, on 2+ ranks.
        RedistOptions opt;
        Redist rd(src, dst, MPI_COMM_WORLD, opt);
        std::vector<double> a(static_cast<std::size_t>(src.size()), 1.0), b(static_cast<std::size_t>(dst.size()));
        estuary::Exchange ex = rd.make_exchange({estuary::Type::f64});
        ex.run({Field(a, b)});
        const bool woven = fast && p > 1 && n / p >= 2 * p;
        if (woven) {
          EXPECT_EQ(ex.timers().interleaved_packs, 1) << at << " rank " << r;
        }
        if (!fast) {
          EXPECT_EQ(ex.timers().interleaved_packs, 0) << at;
        }
      }
    }
  }
}

TEST(Blocks2d, DerivedDatatypeMessages) {
  // ESTUARY_DATATYPE_MIN_RUN=1 sends and receives every one-field message it can as a derived
  // datatype, however short its runs (strided blocks, block -> cyclic's single elements): every
  // test pair under p2p and the staged schedules (which forward through tmp and must keep their
  // packed messages there), doubles and floats, bit for bit against the global indices.
  const int p = etest::world_size(), r = etest::world_rank();
  MinRun all("1");
  std::vector<etest::Case> cases = etest::all_cases(p, r);
  for (auto [nx, ny] : kGrids) {
    cases.push_back({"rows2d->colblocks", gen::rows2d(nx, ny, r, p), gen::colblocks(nx, ny, r, p)});
    cases.push_back({"colblocks->rows2d", gen::colblocks(nx, ny, r, p), gen::rows2d(nx, ny, r, p)});
    cases.push_back({"colblocks->cyclic", gen::colblocks(nx, ny, r, p), gen::cyclic(nx * ny, r, p)});
  }
  for (const std::string alg : {"p2p", "butterfly", "ring-2", "bruck"})
    for (std::size_t i = 0; i < cases.size(); ++i) {
      if (alg != "p2p" && i % 3 != 0) continue;
      i64 zr, pr, ps;
      bool ok = move_and_check<double>(cases[i].src, cases[i].dst, 1, alg, cases[i].name, zr, pr, ps, &cases[i]);
      ok = move_and_check<float>(cases[i].src, cases[i].dst, 1, alg, cases[i].name + " float", zr, pr, ps, &cases[i]) && ok;
      EXPECT_TRUE(etest::all_ok(ok)) << cases[i].name << " [" << alg << "]";
    }
}

TEST(Blocks2d, DerivedDatatypeSendsOnlyInRun) {
  // At the default threshold (1 KiB average runs), rows -> column blocks of a 240 x 390 grid
  // sends block rows of 130 (3 ranks) to 195 doubles straight from the source in run(), and the
  // reverse receives them straight into the row strips. After start() the caller may reuse the
  // source (the I/O server's model ranks do): those sends must pack, so a source overwritten
  // between start() and finish() must not reach the destination. The messages (~290 KB) are
  // far above Open MPI's eager limits, so a send from the source would be read late.
  const int p = etest::world_size(), r = etest::world_rank();
  MinRun standard(nullptr);
  const i64 nx = 240, ny = 390;
  for (bool forward : {true, false}) {
    const Decomp rows = gen::rows2d(nx, ny, r, p), blocks = gen::colblocks(nx, ny, r, p);
    const Decomp& src = forward ? rows : blocks;
    const Decomp& dst = forward ? blocks : rows;
    const std::string what = forward ? "rows2d->colblocks" : "colblocks->rows2d";
    Redist rd(src, dst, MPI_COMM_WORLD, RedistOptions{});
    std::vector<double> a = source_values<double>(src, 0), b(static_cast<std::size_t>(dst.size()));
    const std::vector<i64> didx = dst.to_indices();
    auto check = [&](const std::string& how) {
      bool ok = true;
      for (std::size_t k = 0; k < didx.size() && ok; ++k) ok = etest::same_bits(b[k], etest::value<double>(didx[k], 0));
      EXPECT_TRUE(etest::all_ok(ok)) << what << " " << how << " on rank " << r;
    };
    estuary::Exchange ex = rd.make_exchange({estuary::Type::f64});
    i64 sends = 0, recvs = 0, strided_recvs = 0;
    for (const estuary::Stage& st : ex.schedule().stages) {
      sends += static_cast<i64>(st.sends.size());
      recvs += static_cast<i64>(st.recvs.size());
      for (const estuary::Message& m : st.recvs) {
        bool contiguous = true;
        for (std::size_t k = 0; k < m.blocks.size(); ++k) {
          const estuary::Block& b = m.blocks[k];
          contiguous = contiguous && (b.count == 1 || b.stride == 1) &&
                       (k == 0 || b.offset == m.blocks[k - 1].offset + m.blocks[k - 1].count);
        }
        strided_recvs += contiguous ? 0 : 1;
      }
    }
    // start(), then the source overwritten before finish(): the packed sends carry the old values.
    ex.start({Field(a, b)});
    const std::vector<double> keep = a;
    std::fill(a.begin(), a.end(), -1.0);
    ex.finish();
    check("start, overwrite, finish");
    EXPECT_EQ(ex.timers().typed_sends, 0) << what;
    a = keep;
    std::fill(b.begin(), b.end(), 0.0);
    ex.run({Field(a, b)});
    check("run");
    EXPECT_EQ(ex.timers().typed_sends, sends) << what << " rank " << r;
    // Receives: the block's rows from each strip are one contiguous piece (a plain zero-copy
    // receive); a strip's rows from several blocks are strided pieces (typed, in both runs).
    if (p > 1) {
      EXPECT_EQ(ex.timers().typed_recvs, 2 * strided_recvs) << what << " rank " << r;
      EXPECT_EQ(ex.timers().typed_recvs + ex.timers().zero_copy_recvs, 2 * recvs) << what << " rank " << r;
      if (!forward) {
        EXPECT_GT(strided_recvs, 0) << what;
      }
    }
  }
}
