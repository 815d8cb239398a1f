"""The info codes put and get return (issue 22): an IntEnum with OASIS's names that still equals
OASIS's integers. The reference is OASIS3-MCT's own table (lib/psmile/src/mod_oasis_parameters.F90
and oasis_c.h's return codes), written out here, not read from estuary."""
import enum

import pytest

import estuary
from estuary.couple import OASIS, OasisParameters

# OASIS3-MCT's names and values (mod_oasis_parameters.F90; OASIS_Error from oasis_c.h).
OASIS3_MCT = {
    "OASIS_Ok": 0, "OASIS_Error": -10, "OASIS_NotDef": -2, "OASIS_Var_Uncpl": -1, "OASIS_Out": 20, "OASIS_In": 21,
    "OASIS_InOut": 2, "OASIS_Recvd": 3, "OASIS_Sent": 4, "OASIS_LocTrans": 5, "OASIS_ToRest": 6, "OASIS_Output": 7,
    "OASIS_SentOut": 8, "OASIS_ToRestOut": 9, "OASIS_FromRest": 10, "OASIS_Input": 11, "OASIS_RecvOut": 12,
    "OASIS_FromRestOut": 13, "OASIS_Waitgroup": 14,
}
# The info codes estuary's core returns (estuary::Info), whose names info_name gives.
CORE_CODES = {"OASIS_Ok", "OASIS_Recvd", "OASIS_Sent", "OASIS_LocTrans", "OASIS_ToRest", "OASIS_Output",
              "OASIS_SentOut", "OASIS_ToRestOut", "OASIS_FromRest", "OASIS_Input", "OASIS_RecvOut",
              "OASIS_FromRestOut"}


def test_an_int_enum():
    assert issubclass(OasisParameters, enum.IntEnum)


@pytest.mark.parametrize("name", sorted(OASIS3_MCT))
def test_oasis_names_equal_the_integers(name):
    value = OASIS3_MCT[name]
    member = getattr(OasisParameters, name)  # OASIS3-MCT's spelling
    assert isinstance(member, OasisParameters) and member == value and int(member) == value
    # pyOASIS's spellings are the same member: OASIS_SENT and SENT
    short = name[len("OASIS_"):].upper()
    assert OasisParameters["OASIS_" + short] is member and OasisParameters[short] is member
    assert OasisParameters(value) is member  # what put and get make of the native integer
    assert member.name == "OASIS_" + short  # the canonical name is pyOASIS's
    if name in CORE_CODES:
        assert estuary.info_name(value) == name[len("OASIS_"):]


def test_short_names_of_the_oasis_class():
    assert OASIS.Sent is OasisParameters.OASIS_Sent and OASIS.Recvd == 3 and OASIS.Waitgroup == 14
    assert OASIS.OUT == OasisParameters.OASIS_Out == 20 and OASIS.IN == 21


def test_no_other_values():
    # Every member is one of OASIS's values: no code estuary made up.
    assert {int(m) for m in OasisParameters} == set(OASIS3_MCT.values())
