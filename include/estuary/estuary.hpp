// estuary — the whole C++ API.
#pragma once

#include "estuary/adaptive.hpp"
#include "estuary/allreduce.hpp"
#include "estuary/butterfly.hpp"
#include "estuary/decomp.hpp"
#include "estuary/error.hpp"
#include "estuary/decomp_gen.hpp"
#include "estuary/exchange.hpp"
#include "estuary/conserv.hpp"
#include "estuary/globalsum.hpp"
#include "estuary/grid.hpp"
#include "estuary/plan.hpp"
#include "estuary/redist.hpp"
#include "estuary/remap.hpp"
#include "estuary/schedule.hpp"
#include "estuary/types.hpp"
#include "estuary/weights.hpp"
