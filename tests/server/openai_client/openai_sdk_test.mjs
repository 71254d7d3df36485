// Drives a running sandwichd with the official OpenAI Node SDK, as a user's application would.
// Usage: node openai_sdk_test.mjs BASE_URL API_KEY PROMPT EXPECTED_GREEDY_TEXT
// Exits non-zero with a one-line reason on the first mismatch.
import OpenAI from "openai";

const [baseURL, apiKey, prompt, expected] = process.argv.slice(2);
if (!baseURL || expected === undefined) {
  console.error("usage: node openai_sdk_test.mjs BASE_URL API_KEY PROMPT EXPECTED_GREEDY_TEXT");
  process.exit(2);
}
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 60_000 });

function check(cond, what) {
  if (!cond) {
    console.error(`openai sdk: FAILED: ${what}`);
    process.exit(1);
  }
  console.log(`ok - ${what}`);
}

const models = await client.models.list();
const ids = models.data.map((m) => m.id);
check(ids.length >= 1, `models.list returns the served model (${ids.join(", ")})`);
const model = ids[0];
const maxTokens = 48;
const retrieved = await client.models.retrieve(model);
check(retrieved.id === model && retrieved.object === "model", `models.retrieve returns ${model}`);
try {
  await client.models.retrieve("no-such-model");
  check(false, "models.retrieve of an unknown model is rejected");
} catch (e) {
  check(e instanceof OpenAI.NotFoundError && e.code === "model_not_found", `models.retrieve of an unknown model raises NotFoundError (${e.code})`);
}

const c = await client.completions.create({ model, prompt, max_tokens: maxTokens, temperature: 0 });
check(c.object === "text_completion" && c.choices.length === 1, "completions.create returns one text_completion choice");
check(c.choices[0].text === expected, "greedy completion equals sandwich-generate");
check(c.usage && c.usage.completion_tokens > 0 && c.usage.prompt_tokens > 0, "completion usage is reported");
check(["stop", "length"].includes(c.choices[0].finish_reason), `finish_reason is ${c.choices[0].finish_reason}`);

const stream = await client.completions.create({
  model, prompt, max_tokens: maxTokens, temperature: 0, stream: true, stream_options: { include_usage: true },
});
let text = "", usage = null, chunks = 0;
for await (const chunk of stream) {
  ++chunks;
  if (chunk.choices.length) text += chunk.choices[0].text;
  if (chunk.usage) usage = chunk.usage;
}
check(chunks > 2, `streaming yields chunks (${chunks})`);
check(text === expected, "streamed chunks concatenate to the greedy text");
check(usage && usage.completion_tokens === c.usage.completion_tokens, "include_usage sends the final usage chunk");

const chat = await client.chat.completions.create({
  model, max_tokens: 16, temperature: 0, messages: [
    { role: "system", content: "You tell short stories." },
    { role: "user", content: "Once upon a time" },
  ],
});
check(chat.object === "chat.completion" && chat.choices[0].message.role === "assistant", "chat.completions.create answers as the assistant");
check(typeof chat.choices[0].message.content === "string" && chat.usage.completion_tokens > 0, "chat completion has content and usage");

const chatStream = await client.chat.completions.create({
  model, max_tokens: 16, temperature: 0, stream: true,
  messages: [{ role: "user", content: "Once upon a time" }],
});
let chatText = "", chatChunks = [];
for await (const chunk of chatStream) {
  chatChunks.push(chunk);
  chatText += chunk.choices[0]?.delta?.content ?? "";
}
const opening = chatChunks[0]?.choices[0]?.delta;
check(opening?.role === "assistant" && opening?.content === "", "chat streaming opens with the role alone");
check(chatChunks.slice(1).every((ch) => ch.choices[0]?.delta?.role === undefined), "later chat chunks carry no role");
check(chatText === chat.choices[0].message.content || chatText.length > 0, "chat streaming yields deltas");

try {
  await client.completions.create({ model: "no-such-model", prompt, max_tokens: 4 });
  check(false, "an unknown model is rejected");
} catch (e) {
  check(e instanceof OpenAI.APIError && e.status === 404, `an unknown model raises APIError 404 (${e.status})`);
}
try {
  await client.completions.create({ model, prompt, max_tokens: -3 });
  check(false, "a negative max_tokens is rejected");
} catch (e) {
  check(e instanceof OpenAI.BadRequestError && typeof e.message === "string", `a negative max_tokens raises BadRequestError: ${e.message}`);
}
try {
  await client.completions.create({ model, prompt: "dog ".repeat(600), max_tokens: 10 });
  check(false, "a prompt over the context is rejected");
} catch (e) {
  check(e instanceof OpenAI.BadRequestError && e.code === "context_length_exceeded", `a prompt over the context raises code ${e.code}`);
}
const again = await client.completions.create({ model, prompt, max_tokens: maxTokens, temperature: 0 });
check(again.choices[0].text === expected, "the server still serves after the errors");

// Embeddings: the SDK asks for base64 unless told otherwise, and decodes it to floats.
const emb = await client.embeddings.create({ model, input: ["Once upon a time", prompt] });
const embFloat = await client.embeddings.create({ model, input: "Once upon a time", encoding_format: "float" });
const unit = (v) => Math.abs(Math.hypot(...v) - 1) < 1e-5;
check(emb.object === "list" && emb.data.length === 2 && emb.data[1].index === 1, "embeddings.create returns one embedding per input, in order");
check(emb.data.every((d) => Array.isArray(d.embedding) && d.embedding.length > 0 && unit(d.embedding)), "base64 embeddings decode to unit vectors");
check(embFloat.data[0].embedding.every((x, i) => Math.abs(x - emb.data[0].embedding[i]) < 1e-5), "float and base64 embeddings agree");
check(emb.usage.prompt_tokens > 0 && emb.usage.total_tokens === emb.usage.prompt_tokens, "embeddings usage is reported");
try {
  await client.embeddings.create({ model, input: "Once upon a time", dimensions: 3 });
  check(false, "embeddings of another size are rejected");
} catch (e) {
  check(e instanceof OpenAI.BadRequestError && e.param === "dimensions", `other dimensions raise BadRequestError (${e.param})`);
}
console.log("openai sdk: all checks passed");
