// OASIS's info code names (estuary::Info, couple.hpp).
#include "estuary/couple.hpp"

namespace estuary {

const char* name_of(Info i) {
  switch (i) {
    case Info::ok: return "Ok";
    case Info::recvd: return "Recvd";
    case Info::sent: return "Sent";
    case Info::loctrans: return "LocTrans";
    case Info::torest: return "ToRest";
    case Info::output: return "Output";
    case Info::sentout: return "SentOut";
    case Info::torestout: return "ToRestOut";
    case Info::fromrest: return "FromRest";
    case Info::input: return "Input";
    case Info::recvout: return "RecvOut";
    case Info::fromrestout: return "FromRestOut";
  }
  return "?";
}

}  // namespace estuary
