"""Calls that are wrong, each on a line marked ``# error:`` with the code mypy must report:
test_typing.py checks that mypy --strict finds exactly these, so the typing check can fail."""
import numpy as np

import estuary
import estuary.couple as pyoasis

d = estuary.gen.block("100", 0, 1)  # error: arg-type
r = estuary.Redist(d, d, algorithm=3)  # error: arg-type
r.run(np.zeros(3))  # error: call-overload
v = pyoasis.Var("SST", 7, 20)  # error: arg-type
n: str = estuary.Decomp.empty(4).size  # error: assignment
