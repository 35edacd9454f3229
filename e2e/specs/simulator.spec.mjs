// The simulator, called from a page the way tokenmeter's engine calls it: a
// cross-origin streamed fetch with an Authorization header (so a CORS preflight),
// read through a ReadableStream. Checks CORS on the stream, Resource Timing
// exposure (Timing-Allow-Origin) and that the CJK text arrives exactly as sent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { env } from '../lib/browser.mjs';
import { useSuite } from '../lib/suite.mjs';

const simUrl = () => env('TOKENMETER_SIM_URL');
const suite = useSuite(null);

test('a streamed chat completion crosses origins intact', async () => {
  const page = await suite.browser.newPage();
  await page.goto(suite.site.url);
  const result = await page.evaluate(async (base) => {
    const response = await fetch(`${base}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test' },
      body: JSON.stringify({
        model: 'tokenmeter-sim',
        messages: [{ role: 'user', content: '你好' }],
        max_tokens: 24,
        stream: true,
        stream_options: { include_usage: true },
      }),
    });
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let body = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      body += decoder.decode(value, { stream: true });
    }
    body += decoder.decode();
    const text = body
      .split('\n\n')
      .filter((e) => e.startsWith('data: {'))
      .map((e) => JSON.parse(e.slice(6)))
      .flatMap((c) => c.choices.map((ch) => ch.delta.content ?? ''))
      .join('');
    // The entry appears once the body has ended, sometimes a task or two later.
    let entry;
    for (let tries = 0; !entry && tries < 50; tries += 1) {
      if (tries > 0) await new Promise((resolve) => setTimeout(resolve, 20));
      entry = performance
        .getEntriesByType('resource')
        .find((e) => e.name.endsWith('/chat/completions'));
    }
    return {
      status: response.status,
      id: response.headers.get('x-request-id'),
      text,
      done: body.trimEnd().endsWith('data: [DONE]'),
      protocol: entry?.nextHopProtocol,
      responseStart: entry?.responseStart ?? 0,
    };
  }, simUrl());
  assert.equal(result.status, 200);
  assert.ok(result.done, 'the stream ended with [DONE]');
  assert.ok(result.responseStart > 0, 'Timing-Allow-Origin exposes Resource Timing');
  assert.equal(result.protocol, 'http/1.1');

  const truth = await (await fetch(`${simUrl()}/sim/truth`)).json();
  const mine = truth.requests.find((r) => r.response_id === result.id);
  assert.ok(mine, `the simulator recorded ${result.id}`);
  assert.equal(mine.tokens.length, 24);
  assert.equal(mine.outcome, 'completed');
  assert.equal(result.text, mine.text, 'the text arrived byte for byte');
  assert.match(result.text, /[\u4e00-\u9fff]/, 'and it is Chinese');
  await page.close();
});

test('an error response is readable across origins, Retry-After included', async () => {
  const page = await suite.browser.newPage();
  await page.goto(suite.site.url);
  const result = await page.evaluate(async (base) => {
    const response = await fetch(`${base}/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: 'Bearer sk-test',
        'x-tokenmeter-fault': '429',
      },
      body: JSON.stringify({ model: 'tokenmeter-sim', messages: [], stream: true }),
    });
    return {
      status: response.status,
      retryAfter: response.headers.get('retry-after'),
      body: await response.json(),
    };
  }, simUrl());
  assert.equal(result.status, 429);
  assert.equal(result.retryAfter, '2');
  assert.equal(result.body.error.code, 'rate_limit_exceeded');
  await page.close();
});
