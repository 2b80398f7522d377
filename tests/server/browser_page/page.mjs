// Debian's chromium, headless, driven by puppeteer-core, against the page two `folio serve`s answer
// at /: one open, one with API keys. Usage: node page.mjs OPEN_URL KEYED_URL KEY PDF FIGURE_PAGE
// Fails (exit 1, saying what was missing) unless, for each server, a person's steps work:
// choose the PDF, see each page's image beside its rendered markdown (the headings), switch to the
// raw markdown, download .md equal to the API's markdown; a page with figures shows each figure's
// picture where the markdown links it; with keys, the field is shown, a wrong key is a visible
// error and the right key reads the document. No request leaves the server.
import puppeteer from "puppeteer-core";

const [openUrl, keyedUrl, key, pdf, figurePage] = process.argv.slice(2);
const fail = (why) => {
  console.error("FAIL: " + why);
  process.exit(1);
};

const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"],
});
const timeout = 60000;

async function openPage(url) {
  const page = await browser.newPage();
  const outside = [];
  page.on("request", (r) => {
    const u = r.url();
    if (!u.startsWith(url) && !u.startsWith("data:") && !u.startsWith("blob:")) outside.push(u);
  });
  page.on("requestfailed", (r) => console.error(`request failed: ${r.url().slice(0, 100)}: ${r.failure().errorText}`));
  page.on("pageerror", (e) => fail("script error on the page: " + e.message));
  await page.goto(url + "/", { waitUntil: "load", timeout });
  return { page, outside };
}

async function statusText(page) {
  return page.$eval("#status", (e) => e.textContent);
}

// Chooses the file (the PDF by default) and waits for the document's end; returns the status line.
async function readPdf(page, file = pdf) {
  const input = await page.$("#file");
  await input.uploadFile(file);
  await page.waitForFunction(() => /^(Done|Error)/.test(document.getElementById("status").textContent), { timeout });
  return statusText(page);
}

async function checkReading(url) {
  const { page, outside } = await openPage(url);
  const status = await readPdf(page);
  if (!status.startsWith("Done")) fail(`${url}: the document did not finish: ${status}`);
  const h1 = await page.$$eval(".page .rendered h1", (hs) => hs.map((h) => h.textContent));
  const h2 = await page.$$eval(".page .rendered h2", (hs) => hs.map((h) => h.textContent));
  if (!h1.includes("Reading Long Documents on a Small Machine")) fail(`${url}: no title heading, got ${JSON.stringify(h1)}`);
  if (!h2.includes("How a page is read")) fail(`${url}: no section heading, got ${JSON.stringify(h2)}`);
  const image = await page.$eval(".page img", (img) => ({ w: img.naturalWidth, h: img.naturalHeight }));
  if (!(image.w > 500 && image.h > image.w)) fail(`${url}: the page image is missing or not a page: ${JSON.stringify(image)}`);
  const stats = await page.$eval(".page .stats", (e) => e.textContent);
  if (!/page 1 .* words .* at [0-9.]+ s/.test(stats)) fail(`${url}: no statistics for the page: ${stats}`);
  await page.click('.page button[data-view="raw"]');
  const raw = await page.$eval(".page pre.raw", (e) => (e.hidden ? "" : e.textContent));
  if (!raw.startsWith("# Reading Long Documents")) fail(`${url}: the raw markdown view does not show the markdown`);
  const md = await page.$eval("#download-md", async (a) => (a.getAttribute("aria-disabled") === "false" ? (await fetch(a.href)).text() : ""));
  const json = await page.$eval("#download-json", async (a) => (a.getAttribute("aria-disabled") === "false" ? (await fetch(a.href)).text() : ""));
  const result = JSON.parse(json || "{}");
  if (!md || md !== result.markdown || !md.includes(raw.trim().split("\n")[0])) fail(`${url}: the .md download is not the document's markdown`);
  if (!result.pages || result.pages.length !== 1) fail(`${url}: the .json download does not hold the page`);
  if (outside.length) fail(`${url}: the page loaded from elsewhere: ${outside.join(", ")}`);
  return page;
}

await checkReading(openUrl);
console.log("open server: headings, page image, raw view and downloads shown");

{
  const { page } = await openPage(openUrl);
  const status = await readPdf(page, figurePage);
  if (!status.startsWith("Done")) fail(`figure page did not finish: ${status}`);
  await page.waitForFunction(() => [...document.querySelectorAll(".page .rendered img.figure")].every((i) => i.complete), { timeout });
  const figures = await page.$$eval(".page .rendered img.figure", (is) => is.map((i) => ({ w: i.naturalWidth, alt: i.alt })));
  if (figures.length !== 3 || figures.some((f) => f.w < 100)) fail(`figure page: the figures are not shown: ${JSON.stringify(figures)}`);
}
console.log("open server: a page's figures shown where the markdown links them");

{
  const { page } = await openPage(keyedUrl);
  const shown = await page.$eval("#key-field", (e) => !e.hidden);
  if (!shown) fail("keyed server: no API key field");
  await page.type("#key", "not-the-key");
  const refused = await readPdf(page);
  if (!/^Error: .*API key/.test(refused)) fail(`keyed server: a wrong key did not show the API's refusal: ${refused}`);
  await page.$eval("#key", (e) => (e.value = ""));
  await page.type("#key", key);
  await page.click("#read");
  await page.waitForFunction(() => /^Done/.test(document.getElementById("status").textContent), { timeout });
  const h1 = await page.$$eval(".page .rendered h1", (hs) => hs.map((h) => h.textContent));
  if (!h1.includes("Reading Long Documents on a Small Machine")) fail("keyed server: no title heading with the key");
}
console.log("keyed server: the key field, a refusal for a wrong key, the document with the right one");
await browser.close();
