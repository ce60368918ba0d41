// End to end, once per realtime provider (OpenAI Realtime, Gemini Live, GPT-Live): the demo binary
// (target/debug/voice-agent) on a free port with its scripted model speaking that provider's
// wire, the page in headless Chromium, the customer's question sent, and then checks of what the
// page did, what the page showed, what the page received over its websocket, and what the
// scripted model received from the relay.
//
// Needs `cargo build -p voice-agent` (scripts/test builds every binary first), `npm run build`
// (npm test runs it) and Debian's chromium (scripts/setup installs it).

import { spawn } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { chromium } from "playwright-core";

import { here, repo } from "../build.mjs";

const binary = process.env.VOICE_AGENT ?? join(repo, "target", "debug", "voice-agent");
const chromiumPath = process.env.CHROMIUM ?? "/usr/bin/chromium";
const artefacts = join(here, "test-results");
/** Every wait in this file is bounded by this (or less). */
const LIMIT_MS = 20_000;

const SERVER_CALL_ID = "call_demo_search";
const SERVER_ARGUMENTS_TEXT = "refund for a delivered order";
/** A sentence of the search result that only the server and the model may see. */
const SERVER_RESULT_TEXT = "press Request a refund in the Returns and refunds section";
const RESPONSE_1_CALLS = ["call_demo_search", "call_demo_highlight", "call_demo_scroll"];
const RESPONSE_2_CALLS = ["call_demo_fill", "call_demo_toast", "call_demo_submit"];
const APPROVED_CALL_ID = "call_demo_submit";

/** The relay's side of the conversation as `[kind, call ids]` steps, on either wire. */
function relayFlow(provider, received) {
  if (provider === "gemini-live") {
    // Live has no response.create: the customer's clientContent starts the turn, and each
    // batch's one toolResponse (all its results together) is the continuation.
    return received.flatMap((m) => {
      if (m.clientContent !== undefined) {
        return [["ask", []]];
      }
      if (m.toolResponse !== undefined) {
        return [["results", m.toolResponse.functionResponses.map((r) => r.id).sort()]];
      }
      return [];
    });
  }
  const flow = [];
  for (const e of received) {
    if (e.type === "session.input_audio.append") {
      // GPT-Live: the customer's clip is the question (the page asks for no response).
      if (flow.length === 0) {
        flow.push(["ask", []]);
      }
    } else if (e.type === "response.create") {
      flow.push([flow.length === 0 ? "ask" : "continue", []]);
    } else if (isResult(e)) {
      const last = flow.at(-1);
      if (last?.[0] === "results") {
        last[1].push(e.item.call_id);
        last[1].sort();
      } else {
        flow.push(["results", [e.item.call_id]]);
      }
    }
  }
  return flow;
}

/** A result on OpenAI Realtime's wire (a conversation item) or GPT-Live's (a backend item). */
function isResult(e) {
  return (e.type === "conversation.item.create" || e.type === "response.item.create") && e.item?.type === "function_call_output";
}

/** Every result the model received, by call id, on either wire. */
function resultsOf(provider, received) {
  if (provider === "gemini-live") {
    return Object.fromEntries(
      received
        .flatMap((m) => m.toolResponse?.functionResponses ?? [])
        .map((r) => [r.id, r.response.output]),
    );
  }
  return Object.fromEntries(
    received
      .filter(isResult)
      .map((e) => [e.item.call_id, JSON.parse(e.item.output)]),
  );
}

/** The tool declarations the relay sent first, on either wire. */
function declarationsOf(provider, first) {
  if (provider === "gemini-live") {
    assert.ok(first.setup !== undefined, "the relay declares the tools first (setup)");
    return first.setup.tools.flatMap((t) => t.functionDeclarations ?? []);
  }
  if (provider === "gpt-live") {
    // GPT-Live: the tools are the delegated Responses backend's, in session.start.
    assert.equal(first.type, "session.start", "the relay declares the tools first");
    return first.session.delegation.responses.tools;
  }
  assert.equal(first.type, "session.update", "the relay declares the tools first");
  return first.session.tools;
}

for (const provider of ["openai", "gemini-live", "gpt-live"]) {
  describe(`the demo on ${provider}`, () => demo(provider));
}

function demo(provider) {
  let server;
  let serverExit;
  let browser;
  let page;
  let baseUrl;
  const framesIn = [];
  const framesOut = [];
  let stderr = "";

  function withTimeout(promise, ms, what) {
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
    });
    return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
  }

  /** Starts the demo and resolves with the URL it prints on its first line. */
  function startServer() {
    assert.ok(
      existsSync(binary),
      `${binary} does not exist: run \`cargo build -p voice-agent\` first (or set VOICE_AGENT)`,
    );
    const args = ["--listen", "127.0.0.1:0", "--provider", provider, "--scripted", "--pace-ms", "5", "--test-endpoints"];
    server = spawn(binary, args, {
      cwd: repo,
      stdio: ["ignore", "pipe", "pipe"],
    });
    serverExit = new Promise((resolve) => server.once("exit", (code, signal) => resolve({ code, signal })));
    server.stderr.setEncoding("utf8");
    server.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    const url = new Promise((resolve, reject) => {
      let out = "";
      server.stdout.setEncoding("utf8");
      server.stdout.on("data", (chunk) => {
        out += chunk;
        const match = /^listening on (http:\/\/\S+)\n/.exec(out);
        if (match) {
          resolve(match[1]);
        }
      });
      serverExit.then(({ code, signal }) => reject(new Error(`voice-agent exited (${code ?? signal}):\n${stderr}`)));
    });
    return withTimeout(url, LIMIT_MS, "voice-agent printing its address");
  }

  async function getJson(path) {
    const response = await fetch(new URL(path, baseUrl), { signal: AbortSignal.timeout(5_000) });
    assert.equal(response.status, 200, `GET ${path}`);
    return response.json();
  }

  before(async () => {
    mkdirSync(artefacts, { recursive: true });
    baseUrl = await startServer();
    browser = await chromium.launch({
      executablePath: chromiumPath,
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
      timeout: LIMIT_MS,
    });
    page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    page.setDefaultTimeout(LIMIT_MS);
    page.on("websocket", (ws) => {
      ws.on("framereceived", (frame) => framesIn.push(String(frame.payload)));
      ws.on("framesent", (frame) => framesOut.push(String(frame.payload)));
    });
    page.on("pageerror", (error) => {
      stderr += `page error: ${error.message}\n`;
    });
  });

  after(async () => {
    // Runs when a test failed too: the screenshot helps, the processes must not outlive us.
    try {
      if (page !== undefined) {
        await withTimeout(page.screenshot({ path: join(artefacts, `demo-${provider}.png`) }), 10_000, "screenshot");
      }
    } catch (error) {
      console.error(`no screenshot: ${error.message}`);
    }
    try {
      await withTimeout(browser?.close() ?? Promise.resolve(), 10_000, "closing chromium");
    } catch (error) {
      console.error(error.message);
    }
    if (server !== undefined && server.exitCode === null && server.signalCode === null) {
      server.kill("SIGTERM");
      try {
        await withTimeout(serverExit, 5_000, "voice-agent exiting");
      } catch {
        server.kill("SIGKILL");
      }
    }
  });

  test("the page connects and starts at the top, nothing done yet", async () => {
    await page.goto(baseUrl, { timeout: LIMIT_MS });
    await page.waitForSelector('#status[data-state="connected"]');
    assert.equal(await page.isHidden("#build-hint"), true, "the compiled script ran");
    const state = await page.evaluate(() => ({
      scrollY: window.scrollY,
      refundsTop: document.getElementById("refunds").getBoundingClientRect().top,
      height: window.innerHeight,
      highlighted: document.querySelectorAll("[data-highlight]").length,
      orderNumber: document.querySelector('#refund-form [name="order_number"]').value,
    }));
    assert.equal(state.scrollY, 0);
    assert.ok(state.refundsTop > state.height, `the refunds section starts out of view (${JSON.stringify(state)})`);
    assert.equal(state.highlighted, 0);
    assert.equal(state.orderNumber, "");
    assert.match(await page.inputValue("#question"), /refund/);
    if (provider === "gpt-live") {
      // GPT-Live takes voice only: the page says what its button sends, and that the scripted
      // model does not listen.
      assert.equal(await page.textContent("#send"), "Speak");
      assert.match(await page.textContent("#note"), /sends a 0\.5 s tone as audio.*does not listen/);
    }
  });

  test("the scripted conversation runs: highlight, scroll and fill happen in the page", async () => {
    await page.click("#send");
    // The agent asks before it sends the refund request; the conversation waits for the answer.
    const card = await page.waitForSelector("#approvals .approval");
    assert.equal(await card.getAttribute("data-name"), "submit_refund_request");
    assert.equal(await card.$eval(".approval-title", (e) => e.textContent), "Submit a refund request?");
    assert.match(await card.$eval(".approval-args", (e) => e.textContent), /^order AB-123456 · /);
    await page.waitForTimeout(200);
    assert.equal(
      await page.evaluate(() => document.body.dataset.responsesDone),
      "2",
      "no continuation while the customer has not answered",
    );
    await card.$eval("button.approve", (b) => b.click());
    await page.waitForSelector('body[data-responses-done="3"]');
    assert.equal(await page.$$eval("#approvals .approval", (c) => c.length), 0, "the question is gone");
    // The last response's text has arrived; every client call has finished by then.
    await page.waitForFunction(() => document.querySelectorAll('#calls .call[data-state="running"]').length === 0);

    const state = await page.evaluate(() => {
      const refunds = document.getElementById("refunds").getBoundingClientRect();
      return {
        highlighted: [...document.querySelectorAll("[data-highlight]")].map((e) => [e.id, e.getAttribute("data-highlight")]),
        scrollY: window.scrollY,
        refundsTop: refunds.top,
        refundsBottom: refunds.bottom,
        height: window.innerHeight,
        orderNumber: document.querySelector('#refund-form [name="order_number"]').value,
        toasts: [...document.querySelectorAll("#toasts .toast")].map((t) => [t.className, t.textContent]),
      };
    });
    assert.deepEqual(state.highlighted, [["refund-button", "yellow"]]);
    assert.ok(state.scrollY > 0, "the page scrolled");
    assert.ok(
      state.refundsTop >= -1 && state.refundsTop < state.height / 2,
      `the refunds section is at the top of the view (${JSON.stringify(state)})`,
    );
    assert.equal(state.orderNumber, "AB-123456");
    assert.deepEqual(state.toasts, [["toast toast-success", "Order AB-123456 added to the refund form"]]);
  });

  test("the page shows every call: name, where it ran, arguments, result, duration", async () => {
    const calls = await page.$$eval("#calls .call", (items) =>
      items.map((li) => ({
        name: li.dataset.name,
        location: li.dataset.location,
        state: li.dataset.state,
        relay: li.dataset.relay ?? null,
        time: li.querySelector(".call-time").textContent,
        rows: [...li.querySelectorAll(".call-row")].map((r) => [
          r.querySelector(".call-label").textContent,
          r.querySelector("code").textContent,
        ]),
      })),
    );
    const byName = Object.fromEntries(calls.map((c) => [c.name, c]));
    assert.deepEqual(
      calls.map((c) => c.name).sort(),
      [
        "fill_form_field",
        "highlight_element",
        "scroll_to_section",
        "search_help_articles",
        "show_toast",
        "submit_refund_request",
        "submit_refund_request",
      ],
      JSON.stringify(calls, null, 1),
    );
    for (const call of calls) {
      assert.match(call.time, /^\d+(\.\d)? ms$/, `${call.name} shows its duration`);
    }

    // The approval, then the approved server call (whose arguments and result stay there).
    const submit = calls.filter((c) => c.name === "submit_refund_request");
    assert.deepEqual(submit[0].rows, [["approval", "approved"]]);
    assert.equal(submit[1].location, "server");
    assert.deepEqual(submit[1].rows[1], ["result", "ok · kept on the server"]);

    const search = byName.search_help_articles;
    assert.equal(search.location, "server");
    assert.equal(search.state, "ok");
    assert.deepEqual(search.rows, [
      ["args", "kept on the server"],
      ["result", "ok · kept on the server"],
    ]);

    const highlight = byName.highlight_element;
    assert.equal(highlight.location, "browser");
    assert.equal(highlight.state, "ok");
    assert.deepEqual(highlight.rows[0], ["args", '{"selector":"#refund-button","color":"yellow"}']);
    assert.deepEqual(highlight.rows[1], ["result", '{"found":true}']);
    assert.deepEqual(byName.scroll_to_section.rows[1], ["result", '{"scrolled":true}']);
    assert.deepEqual(byName.fill_form_field.rows[0], ["args", '{"field":"order_number","value":"AB-123456"}']);
    assert.deepEqual(byName.fill_form_field.rows[1], ["result", '{"filled":true}']);
    assert.equal(byName.show_toast.state, "sent");
    for (const name of ["highlight_element", "scroll_to_section", "fill_form_field"]) {
      assert.equal(byName[name].relay, "ok", `the relay confirmed ${name}'s result reached the model`);
    }
    assert.equal(byName.show_toast.relay, "acknowledged");

    const bubbles = await page.$$eval("#conversation .bubble", (items) => items.map((b) => [b.className, b.textContent]));
    assert.equal(bubbles.length, 4, JSON.stringify(bubbles));
    assert.equal(bubbles[0][0], "bubble bubble-user");
    if (provider === "gpt-live") {
      // The customer's words are what the model transcribed of the clip.
      assert.equal(bubbles[0][1], (await getJson("/config.json")).question);
    }
    assert.match(bubbles[1][1], /^Let me look that up/);
    assert.match(bubbles[2][1], /refund form/);
    assert.match(bubbles[3][1], /Anything else I can do\?$/);
  });

  test("the scripted model got every result and exactly one continuation per response", async () => {
    const report = await getJson("/_test/model");
    assert.equal(report.connections.length, 1);
    const received = report.connections[0].received;
    const declarations = declarationsOf(provider, received[0]);
    assert.deepEqual(declarations.map((t) => t.name).sort(), [
      "fill_form_field",
      "get_order_status",
      "highlight_element",
      "scroll_to_section",
      "search_help_articles",
      "show_toast",
      "submit_refund_request",
    ]);
    const submitDeclared = declarations.find((t) => t.name === "submit_refund_request");
    assert.match(submitDeclared.description, /waits for the user's approval/, "the model is told");

    const fillers = received.filter((e) => e.type === "response.create" && e.response?.conversation === "none");
    assert.equal(fillers.length, 0, "no filler responses in the scripted run");
    // The relay's side of the conversation, in order: the question, each response's results
    // (all of them before the model is asked to go on), the continuations.
    const results1 = ["results", [...RESPONSE_1_CALLS].sort()];
    const results2 = ["results", [...RESPONSE_2_CALLS].sort()];
    const expected =
      provider === "gemini-live"
        ? [["ask", []], results1, results2]
        : [["ask", []], results1, ["continue", []], results2, ["continue", []]];
    assert.deepEqual(relayFlow(provider, received), expected);

    const outputs = resultsOf(provider, received);
    assert.equal(outputs.call_demo_search.articles[0].id, "request-refund", "the server tool searched the bundled articles");
    assert.deepEqual(outputs.call_demo_highlight, { found: true });
    assert.deepEqual(outputs.call_demo_scroll, { scrolled: true });
    assert.deepEqual(outputs.call_demo_fill, { filled: true });
    assert.equal(outputs.call_demo_toast.status, "sent", "fire-and-forget is acknowledged by the relay");
    assert.deepEqual(
      outputs.call_demo_submit,
      { request_id: "RR-123456", order_number: "AB-123456", status: "submitted" },
      "approved in the page, so the server ran it",
    );

    // No late continuation after the closing response.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const again = await getJson("/_test/model");
    assert.deepEqual(relayFlow(provider, again.connections[0].received), expected);
    assert.equal(again.counters.continuations, 2);
    assert.equal(again.counters.results_accepted, 3);
    assert.equal(again.counters.results_rejected, 0);
    assert.equal(again.counters.approvals_requested, 1);
    assert.equal(again.counters.approvals_granted, 1);
    assert.equal(again.connections[0].script_finished, true);
  });

  test("the page never saw the server call's id, arguments or result", () => {
    const seen = framesIn.join("\n");
    assert.ok(framesIn.length > 20, `the page received the conversation (${framesIn.length} frames)`);
    assert.ok(seen.includes("call_demo_highlight"), "client calls do reach the page");
    assert.ok(seen.includes('"type":"toolc.trace"'), "the relay sent its trace events");
    for (const hidden of [SERVER_CALL_ID, SERVER_ARGUMENTS_TEXT, SERVER_RESULT_TEXT, "item_call_demo_search", APPROVED_CALL_ID, "RR-123456"]) {
      assert.ok(!seen.includes(hidden), `the page received \`${hidden}\``);
    }
    const sent = framesOut.map((f) => JSON.parse(f));
    if (provider === "gpt-live") {
      const clip = sent.filter((m) => m.type === "session.input_audio.append");
      assert.equal(clip.length, 5, "the page spoke its clip: five 100 ms chunks");
      for (const chunk of clip) {
        // 2400 samples of PCM16 at 24 kHz, base64.
        assert.equal(Buffer.from(chunk.audio, "base64").length, 4800);
      }
      assert.ok(Buffer.from(clip[2].audio, "base64").some((b) => b !== 0), "a tone, not silence");
      assert.deepEqual(
        [...new Set(sent.map((m) => m.type))].sort(),
        ["function_call.result", "session.input_audio.append", "toolc.approval.response"],
        "the page sent its voice and the browser protocol, nothing the server owns",
      );
    }
    assert.deepEqual(
      sent.filter((m) => m.type === "function_call.result").map((m) => m.call_id).sort(),
      ["call_demo_fill", "call_demo_highlight", "call_demo_scroll"],
      "the page answered its three waiting calls and nothing else",
    );
    const requests = framesIn.map((f) => JSON.parse(f)).filter((m) => m.type === "toolc.approval.request");
    assert.equal(requests.length, 1);
    assert.deepEqual(
      sent.filter((m) => m.type === "toolc.approval.response"),
      [{ type: "toolc.approval.response", approval_id: requests[0].approval_id, approved: true }],
      "one answer, bound to the request's id",
    );
    assert.equal(stderr.includes("page error"), false, stderr);
  });
}
