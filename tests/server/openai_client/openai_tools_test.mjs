// Tool calling through the official OpenAI Node SDK, on a random-weight model served with a chat
// template of Llama-3.1, Qwen2.5 or Mistral (their tool-call formats: llama3_json, hermes,
// mistral). Random weights never write a call on their own, so the calls come from grammars:
// tool_choice required and named (the server's own grammar), and tool_choice auto with a grammar
// (llama-server's `grammar` field) forcing the text of a call in the model's format, which the
// server must parse back into tool_calls, whole and streamed.
// Usage: node openai_tools_test.mjs BASE_URL FORMAT
// Exits non-zero with a one-line reason on the first mismatch.
import OpenAI from "openai";

const [baseURL, format] = process.argv.slice(2);
if (!baseURL || !["llama3_json", "hermes", "mistral"].includes(format)) {
  console.error("usage: node openai_tools_test.mjs BASE_URL llama3_json|hermes|mistral");
  process.exit(2);
}
const client = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0, timeout: 60_000 });

function check(cond, what) {
  if (!cond) {
    console.error(`openai tools (${format}): FAILED: ${what}`);
    process.exit(1);
  }
  console.log(`ok - ${what}`);
}

const model = (await client.models.list()).data[0].id;
// Only enums and booleans: a grammar-forced output is short and always complete, whatever the
// random weights prefer.
const tools = [
  {
    type: "function",
    function: {
      name: "get_weather",
      description: "The weather in a city",
      parameters: {
        type: "object",
        properties: { city: { type: "string", enum: ["Paris", "Tokyo"] }, celsius: { type: "boolean" } },
        required: ["city", "celsius"],
        additionalProperties: false,
      },
    },
  },
  {
    type: "function",
    function: {
      name: "get_time",
      description: "The time in a time zone",
      parameters: {
        type: "object",
        properties: { zone: { type: "string", enum: ["UTC", "CET"] } },
        required: ["zone"],
        additionalProperties: false,
      },
    },
  },
];
const user = [{ role: "user", content: "What is the weather in Paris?" }];
const base = { model, temperature: 0, max_tokens: 24, tools };
const idPattern = format === "mistral" ? /^[A-Za-z0-9]{9}$/ : /^call_[A-Za-z0-9]{24}$/;
const markup = ["<tool_call>", "</tool_call>", "[TOOL_CALLS]", "<|python_tag|>"];

function checkCall(call, names, what) {
  check(idPattern.test(call.id) && call.type === "function", `${what}: id ${call.id} and type function`);
  check(names.includes(call.function.name), `${what}: calls a declared function (${call.function.name})`);
  const args = JSON.parse(call.function.arguments);
  const schema = tools.find((t) => t.function.name === call.function.name).function.parameters;
  const ok = Object.entries(schema.properties).every(([k, p]) =>
    p.enum ? p.enum.includes(args[k]) : typeof args[k] === "boolean");
  check(ok && Object.keys(args).length === Object.keys(schema.properties).length,
        `${what}: arguments ${call.function.arguments} match the parameters`);
  return args;
}

// --- What needs no grammar. ---
const auto = await client.chat.completions.create({ ...base, messages: user });
const autoChoice = auto.choices[0];
check(autoChoice.message.role === "assistant" && ["stop", "length", "tool_calls"].includes(autoChoice.finish_reason),
      `tool_choice auto answers (finish_reason ${autoChoice.finish_reason})`);
check(autoChoice.message.tool_calls?.length > 0 || typeof autoChoice.message.content === "string",
      "tool_choice auto: content or tool calls");

const autoStream = client.beta.chat.completions.stream({ ...base, messages: user, stream: true });
const autoFinal = await autoStream.finalChatCompletion();
check(autoFinal.choices[0].message.role === "assistant", "a streamed tool_choice auto is assembled by the SDK's stream helper");

const none = await client.chat.completions.create({ ...base, messages: user, tool_choice: "none" });
check(none.choices[0].message.tool_calls === undefined && typeof none.choices[0].message.content === "string" &&
      none.choices[0].finish_reason !== "tool_calls", "tool_choice none: content only");

// A round trip: the history of an earlier call and the tool's answer (the id as Mistral's templates
// insist: 9 alphanumerics).
const history = [
  ...user,
  { role: "assistant", content: null, tool_calls: [{ id: "abcDEF123", type: "function",
    function: { name: "get_weather", arguments: '{"city": "Paris", "celsius": true}' } }] },
  { role: "tool", tool_call_id: "abcDEF123", content: "21 degrees and sunny" },
];
const after = await client.chat.completions.create({ ...base, messages: history });
check(after.choices[0].message.role === "assistant", "a conversation with a tool call and a tool message is answered");

for (const [body, param, what] of [
  [{ tool_choice: { type: "function", function: { name: "nope" } } }, "tool_choice", "a named tool_choice outside tools"],
  [{ tools: [{ type: "function", function: { name: "" } }] }, "tools", "a tool without a name"],
  [{ functions: [{ name: "f" }] }, "functions", "the legacy functions"],
  [{ tool_choice: "required", response_format: { type: "json_object" } }, "tool_choice", "tool_choice required with a response_format"],
]) {
  try {
    await client.chat.completions.create({ ...base, messages: user, ...body });
    check(false, `${what} is refused`);
  } catch (e) {
    check(e instanceof OpenAI.BadRequestError && e.param === param, `${what} raises BadRequestError on '${param}' (${e.message})`);
  }
}

// --- What the grammar makes of random weights. ---
const required = await client.chat.completions.create({
  ...base, max_tokens: 200, messages: user, tool_choice: "required", parallel_tool_calls: false,
});
const req = required.choices[0];
check(req.finish_reason === "tool_calls" && req.message.tool_calls?.length === 1,
      `tool_choice required makes one call (${JSON.stringify(req.message)})`);
check(req.message.content === null, "tool_choice required: content is null");
checkCall(req.message.tool_calls[0], ["get_weather", "get_time"], "tool_choice required");

const named = client.beta.chat.completions.stream({
  ...base, max_tokens: 200, messages: user, stream: true,
  tool_choice: { type: "function", function: { name: "get_time" } },
});
let namedContent = "";
named.on("chunk", (ch) => { namedContent += ch.choices[0]?.delta?.content ?? ""; });
const namedFinal = await named.finalChatCompletion();
const nc = namedFinal.choices[0];
check(nc.finish_reason === "tool_calls" && nc.message.tool_calls?.length === 1 && namedContent === "",
      `a streamed named tool_choice is one call and no content (${JSON.stringify(nc.message)})`);
checkCall(nc.message.tool_calls[0], ["get_time"], "named tool_choice, streamed");

// The model's own format, forced by a grammar of its exact text, parsed back by the server.
const callText = {
  llama3_json: '{"name": "get_weather", "parameters": {"city": "Paris", "celsius": true}}',
  hermes: '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "celsius": true}}\n</tool_call>',
  mistral: '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris", "celsius": true}}]',
}[format];
const grammar = `root ::= ${JSON.stringify(callText)}`;
const own = await client.chat.completions.create({ ...base, max_tokens: 200, messages: user, grammar });
const oc = own.choices[0];
check(oc.finish_reason === "tool_calls" && oc.message.tool_calls?.length === 1 && oc.message.content === null,
      `the ${format} call the model wrote is parsed into tool_calls (${JSON.stringify(oc.message)})`);
const ownArgs = checkCall(oc.message.tool_calls[0], ["get_weather"], `${format} call`);
check(ownArgs.city === "Paris" && ownArgs.celsius === true, `${format} call: the arguments written`);

const ownStream = client.beta.chat.completions.stream({ ...base, max_tokens: 200, messages: user, grammar, stream: true });
let ownContent = "";
ownStream.on("chunk", (ch) => { ownContent += ch.choices[0]?.delta?.content ?? ""; });
const ownFinal = await ownStream.finalChatCompletion();
const osc = ownFinal.choices[0];
check(!markup.some((m) => ownContent.includes(m)) && ownContent.trim() === "",
      `streamed ${format} call: no markup in the content (${JSON.stringify(ownContent)})`);
check(osc.finish_reason === "tool_calls" && osc.message.tool_calls?.length === 1 &&
      osc.message.tool_calls[0].function.name === "get_weather" &&
      JSON.parse(osc.message.tool_calls[0].function.arguments).city === "Paris",
      `streamed ${format} call: delta.tool_calls assembled by the SDK (${JSON.stringify(osc.message)})`);

// A round trip with the server's own call and id, as an SDK user appends them.
const roundTrip = await client.chat.completions.create({
  ...base, messages: [...user, req.message,
    { role: "tool", tool_call_id: req.message.tool_calls[0].id, content: "done" }],
});
check(roundTrip.choices[0].message.role === "assistant", "the server's own call and id go back through the template");
console.log("openai tools: all checks passed");
