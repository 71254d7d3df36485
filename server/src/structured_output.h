#pragma once
// The structured-output fields of a request, under every name clients use for them: OpenAI's
// response_format, vLLM's guided_* and structured_outputs, llama-server's grammar and
// json_schema. Each becomes one GBNF grammar the output must match.
#include "request_fields.h"
#include "request_parsing.h"

namespace sandwich::server {

// Sets r.grammar and r.grammar_param from whichever field asks for structured output (at most
// one may). A schema, regex or choice list that cannot be compiled is a 400 naming the field and
// the construct.
void parse_structured_output(const Fields& f, GenerateRequest& r);

}  // namespace sandwich::server
