#pragma once
// Why a sequence stopped generating: the scheduler's and the generator's common answer.
namespace sandwich {

enum class FinishReason {
  None,    // still generating
  Stop,    // a stop token or a stop string
  Length,  // max_tokens or the context is used up
  Abort,   // cancelled, timed out, shut down or failed (the scheduler says which: AbortReason)
};

// "stop" and "length" are the OpenAI API's finish_reason values. "abort" is never one: the server
// answers an aborted request with an error instead. "" for None.
constexpr const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::Stop:
      return "stop";
    case FinishReason::Length:
      return "length";
    case FinishReason::Abort:
      return "abort";
    case FinishReason::None:
      break;
  }
  return "";
}

}  // namespace sandwich
