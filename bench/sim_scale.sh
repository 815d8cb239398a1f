#!/bin/bash
# Paper 004's figures at full scale on this machine (issue 9, "Scale"): every run is one
# bench/sim process (SimGrid allows one engine a process) started by `estuary simulate`, which
# writes the JSON lines (simulated time, wall times, peak memory a run) and the PNG of each
# figure. A run stopped at 10 minutes is reported as failed (the issue's bound). About an hour of
# CPU in all: not part of `make test`.
#
#   bench/sim_scale.sh [BUILD_DIR] [OUT_DIR] [FIGURE...]
#   bench/sim_scale.sh build build/sim_scale fig9a fig10b
#
# Figures (default: all):
#   fig9a   halo widths 3, 10, 20, 30 on a torus, 10^3 to 10^5 ranks
#   fig9b   halo width 20 on torus, fat tree and dragonfly, 10^3 and 10^4 ranks (10^5 on the
#           torus is in fig9a; the dragonfly at 10^5 ran over 12 minutes)
#   fig10b  one recursive-doubling allreduce of 3 doubles on the three, 10^3 to 10^5 ranks
#   fig5a   transposition burst, Bruck, ring-1, ring-4 on a fat tree, 10^3 and 10^4 ranks
#   fig5a_ib  the same with SimGrid's InfiniBand model (per-node flow penalty), 64 to 10^3
#           ranks (its penalties are recomputed per flow event: burst at 10^3 takes minutes)
#   fig9c   halo width 20 on a dragonfly, minimal / valiant / UGAL routing, 10^3 ranks
#   fig9d   the halo's communication matrix at 10^3 ranks
#   sk1e6   issue 23: one recursive-doubling allreduce (3 doubles) and the halo of width 20 at
#           10^6 simulated ranks on a torus, 4 ranks a host (--ranks-per-host 4; one host a rank
#           would need ~17 GB, see docs/simulator.md). The allreduce at 2^20 ranks (262 144 hosts,
#           64x64x64): at 10^6, not a power of 2, its replay on 100x50x50 spent over 10 minutes of
#           CPU in the max-min solver and did not end in 30. The halo at 10^6 on a 250x40x25
#           torus, whose first dimension is a row of the 1000 x 1000 rank grid at 4 ranks a host
#           (on 100x50x50 a row wraps: grid neighbours up to 52 hops apart, and the replay did not
#           end in 30 minutes). 30 minutes a run at most, and a run is refused memory past 21 GB
#           (ulimit -v) rather than pushing the machine into its OOM killer
#   sk_k    issue 23: what --ranks-per-host K changes, at 2.6x10^5 ranks (K = 1, 4, 16 on the torus)
#   tr1e5   issue 23: the transposition (Bruck) at 10^5 ranks on the fat tree, 30 minutes at most
# (sk1e6, sk_k and tr1e5 are not in the default set: add them by name.)
# Machines are the ones `--topology` builds: exactly the job's ranks where they factor
# (bench/sim.cpp, machine()). Rank counts 1000, 10000, 100000 factor on every topology but the
# fat tree at 10^5 (a 3-level 47-ary tree of 103 823 hosts).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build}
out=${2:-$build/sim_scale}
shift $(( $# > 2 ? 2 : $# ))
figures=("$@")
[ ${#figures[@]} -gt 0 ] || figures=(fig9a fig9b fig10b fig5a fig5a_ib fig9c fig9d)
mkdir -p "$out"
export PYTHONPATH="$here/python:$build/python${PYTHONPATH:+:$PYTHONPATH}"
export ESTUARY_SIM_BENCH="$build/bench/sim"
[ -x "$ESTUARY_SIM_BENCH" ] || { echo "sim_scale: no $ESTUARY_SIM_BENCH (build first: make build)" >&2; exit 2; }

limit=600  # seconds a run may take (the issue 9 bound; issue 23's runs at 10^6 have 1800)
simulate() {  # NAME ARGS...: JSON lines in OUT/NAME.jsonl, the plot in OUT/NAME.png
  local name=$1
  shift
  echo "== $name: estuary simulate $*" >&2
  python3 -m estuary simulate "$@" --time-limit "$limit" --json --plot "$out/$name.png" >"$out/$name.jsonl" ||
    echo "sim_scale: $name had failed runs (see $out/$name.jsonl)" >&2
}
# NAME ARGS...: simulate with 30 minutes a run and at most 21 GB of address space a process; should
# the machine run out of memory anyway, the kernel's OOM killer takes this run first (oom_score_adj).
big() {
  (limit=1800 && ulimit -v $((21 * 1024 * 1024)) && { echo 1000 >/proc/self/oom_score_adj || true; } && simulate "$@")
}

for f in "${figures[@]}"; do
  case $f in
    fig9a) simulate fig9a halo --ranks 1000,10000,100000 --topology torus --width 3,10,20,30 ;;
    fig9b) simulate fig9b halo --ranks 1000,10000 --topology torus,fattree,dragonfly --width 20 ;;
    fig10b) simulate fig10b allreduce --ranks 1000,10000,100000 --topology torus,fattree,dragonfly --repeat 1 ;;
    fig5a) simulate fig5a transposition --ranks 1000,10000 --topology fattree --algorithm burst,bruck,ring-1,ring-4 ;;
    fig5a_ib) simulate fig5a_ib transposition --ranks 64,256,1000 --topology fattree --network ib \
      --algorithm burst,bruck,ring-1,ring-4 ;;
    fig9c) simulate fig9c halo --ranks 1000 --topology dragonfly --routing minimal,valiant,ugal --width 20 ;;
    fig9d) python3 -m estuary simulate halo --ranks 1000 --topology torus --width 30 --json \
      --matrix "$out/fig9d.png" >"$out/fig9d.jsonl" ;;
    sk1e6) big sk1e6_allreduce allreduce --ranks 1048576 --topology torus --repeat 1 --ranks-per-host 4
      big sk1e6_halo halo --ranks 1000000 --platform torus:250x40x25 --width 20 --ranks-per-host 4 ;;
    sk_k) for k in 1 4 16; do
        big "sk_k${k}_allreduce" allreduce --ranks 262144 --topology torus --repeat 1 --ranks-per-host "$k"
        big "sk_k${k}_halo" halo --ranks 262144 --topology torus --width 20 --ranks-per-host "$k"
      done ;;
    tr1e5) big tr1e5 transposition --ranks 100000 --topology fattree --algorithm bruck ;;
    *) echo "sim_scale: unknown figure '$f'" >&2; exit 2 ;;
  esac
done
echo "sim_scale: results in $out" >&2
