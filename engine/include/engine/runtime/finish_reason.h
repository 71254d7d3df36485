#pragma once
// Why a sequence stopped generating: the scheduler's and the generator's common answer.
#include <string_view>

#include "common/enum_names.h"

namespace sandwich::engine {

enum class FinishReason {
  None,    // still generating
  Stop,    // a stop token or a stop string
  Length,  // max_tokens or the context is used up
  Abort,   // cancelled, timed out, shut down or failed (the scheduler says which: AbortReason)
};

// "stop" and "length" are the OpenAI API's finish_reason values. "abort" is never one: the server
// answers an aborted request with an error instead. "" for None.
inline constexpr EnumName<FinishReason> kFinishReasonNames[] = {
    {FinishReason::Stop, "stop"}, {FinishReason::Length, "length"}, {FinishReason::Abort, "abort"}};
constexpr std::string_view finish_reason_name(FinishReason r) {
  return name_of(r, kFinishReasonNames, "");
}

}  // namespace sandwich::engine
