// The official openai npm package against two running `folio serve`s, one serving a text model
// (models.list / retrieve, chat, streaming chat with `stop`, completions whole and streamed, an
// error the SDK must surface) and one the shipped OCR model (an image read through chat).
// Exits 1 at the first failure.
import OpenAI from "openai";
import { readFileSync } from "node:fs";

const [textURL, ocrURL, pngPath] = process.argv.slice(2);
const client = new OpenAI({ baseURL: textURL, apiKey: "test-key", maxRetries: 0, timeout: 120000 });
const ocrClient = new OpenAI({ baseURL: ocrURL, apiKey: "test-key", maxRetries: 0, timeout: 120000 });

function check(cond, what) {
  if (!cond) {
    console.error("FAIL: " + what);
    process.exit(1);
  }
  console.log("ok: " + what);
}

const list = await client.models.list();
check(list.data.length >= 1 && list.data[0].object === "model", "models.list");
const model = list.data[0].id;
const one = await client.models.retrieve(model);
check(one.id === model && one.object === "model", "models.retrieve");

const chat = await client.chat.completions.create({
  model,
  messages: [{ role: "user", content: "hello" }],
  max_tokens: 8,
});
check(chat.object === "chat.completion" && typeof chat.choices[0].message.content === "string", "chat.completions.create");
check(chat.usage.completion_tokens >= 1 && chat.usage.completion_tokens <= 8, "chat usage");

// Streamed with a stop string taken from the whole answer: the stream ends before it.
const whole = await client.chat.completions.create({ model, messages: [{ role: "user", content: "hi" }], max_tokens: 24 });
const full = whole.choices[0].message.content;
const stop = full.length > 4 ? full.slice(2, 4) : null;
const stream = await client.chat.completions.create({
  model,
  messages: [{ role: "user", content: "hi" }],
  max_tokens: 24,
  stream: true,
  stream_options: { include_usage: true },
  ...(stop ? { stop } : {}),
});
let streamed = "";
let finish = null;
let usage = null;
for await (const chunk of stream) {
  if (chunk.usage) usage = chunk.usage;
  for (const c of chunk.choices) {
    streamed += c.delta?.content ?? "";
    if (c.finish_reason) finish = c.finish_reason;
  }
}
check(stop ? streamed === full.slice(0, full.indexOf(stop)) : streamed === full, "streamed chat text (stop: " + JSON.stringify(stop) + ")");
check(finish !== null && usage !== null, "stream finish reason and usage");

const comp = await client.completions.create({ model, prompt: "The", max_tokens: 6 });
check(comp.object === "text_completion" && typeof comp.choices[0].text === "string", "completions.create");
const compStream = await client.completions.create({ model, prompt: "The", max_tokens: 6, stream: true });
let compText = "";
for await (const chunk of compStream) compText += chunk.choices[0]?.text ?? "";
check(compText === comp.choices[0].text, "streamed completion equals the whole one");

const png = readFileSync(pngPath).toString("base64");
const ocr = await ocrClient.chat.completions.create({
  messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "data:image/png;base64," + png } }] }],
});
check(ocr.choices[0].message.content.length > 0, "an image read through chat");

try {
  await client.chat.completions.create({ model: "no-such-model", messages: [{ role: "user", content: "x" }] });
  check(false, "an unknown model is an error");
} catch (e) {
  check(e instanceof OpenAI.NotFoundError && e.code === "model_not_found", "an unknown model is a NotFoundError the SDK parses");
}
console.log("all passed");
