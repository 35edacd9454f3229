// Conversations of three turns against the simulator (its prompt cache on): each
// turn sends the conversation so far with the answers the simulator really gave,
// a think time after the answer before; the first turn of each conversation is
// its own (nothing cached), the later ones read the earlier ones from the cache,
// and the table by turn says so.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startSim } from '../lib/sim.mjs';
import { useSuite } from '../lib/suite.mjs';
import { AppPage } from '../pages/app.mjs';

const suite = useSuite(null);
const sims = [];
after(() => sims.forEach((s) => s.close()));

test('three-turn conversations grow by the answers the simulator gave', async () => {
  const sim = await startSim([]);
  sims.push(sim);
  const page = await suite.browser.newPage({ acceptDownloads: true });
  const app = new AppPage(page);
  await app.open(suite.site.url);
  await app.fillPlan({ 'base-url': sim.baseUrl, levels: '1,2', 'requests-per-level': 6, 'max-tokens': 8, warmup: 0 });
  await app.byTestId('advanced').locator('summary').click();
  assert.equal(await app.byTestId('think-time').isDisabled(), true, 'no think time for single requests');
  await app.fill('turns', 3);
  await app.fill('think-time', 60);
  await app.run();
  await app.waitForStatus('done');
  const doc = await app.exportJson();
  assert.deepEqual(doc.plan.conversation, { turns: 3, think_ms: 60 });
  const truth = new Map((await sim.truth()).requests.map((t) => [t.response_id, t]));
  const sessions = new Map();
  for (const r of doc.records) {
    assert.ok(r.turn, 'every request is a turn of a conversation');
    assert.equal(r.error, null);
    if (!sessions.has(r.turn.session)) sessions.set(r.turn.session, []);
    sessions.get(r.turn.session).push(r);
  }
  assert.equal(sessions.size, 4, 'two conversations per level');
  for (const turns of sessions.values()) {
    turns.sort((a, b) => a.turn.index - b.turn.index);
    assert.deepEqual(turns.map((r) => r.turn.index), [0, 1, 2]);
    const told = turns.map((r) => truth.get(r.response_id));
    // The conversation so far, and one message more: 1, 3, then 5 messages.
    assert.deepEqual(told.map((t) => t.n_messages), [1, 3, 5]);
    for (let i = 1; i < 3; i++) {
      // What was said before, the answer included, is in the next turn's prompt.
      assert.ok(told[i].prompt_tokens > told[i - 1].prompt_tokens + told[i - 1].tokens.length, JSON.stringify(told.map((t) => t.prompt_tokens)));
      assert.ok(told[i].cached_tokens > 0, 'a later turn reads the earlier ones from the cache');
      assert.equal(turns[i].usage.cached_tokens, told[i].cached_tokens);
      // The user's think time after the answer before.
      assert.ok(turns[i].sent_us - turns[i - 1].end_us >= 55_000, `${turns[i].sent_us - turns[i - 1].end_us} µs`);
    }
    assert.equal(told[0].cached_tokens, 0, 'each conversation starts with a message of its own');
  }
  // The table by turn: the first turn computed, the later ones cached.
  const cached = await page.locator('[data-testid="turn-row"][data-concurrency="1"] td[data-col="cached_input"]').allTextContents();
  assert.equal(cached.length, 3);
  assert.equal(cached[0], '0%');
  assert.ok(cached.slice(1).every((c) => parseFloat(c) > 0), cached.join());
  assert.equal(doc.levels[0].turns.length, 3);
  assert.deepEqual(doc.levels.map((l) => [l.sessions.n_sessions, l.sessions.n_whole]), [[2, 2], [2, 2]]);
  // A whole conversation: three answers and two think times at least.
  assert.ok(doc.levels[0].sessions.duration_ms.min >= 2 * 60, JSON.stringify(doc.levels[0].sessions));
  assert.match(await app.byTestId('sessions').textContent(), /concurrency 1: 2 conversations, 2 whole/);
  // Nothing said of a cache the plan did not ask for.
  assert.ok(!doc.environment.conditions.some((c) => c.kind === 'prompt_cache_hits'), JSON.stringify(doc.environment.conditions));
  await app.byTestId('lang-zh').click();
  assert.match(await page.locator('[data-testid="turns-table"]').textContent(), /轮次/);
  await page.close();
});
