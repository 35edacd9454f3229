// The user's own prompts from a file opened in the page (never uploaded): JSON lines
// of prompts and chat messages, ShareGPT, or one prompt per line; sent as written, in
// order or at random from the run's seed; the plan keeps the file's name, count and
// SHA-256, a link asks for the file again and checks it; a bad file is refused by line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { useSuite } from '../lib/suite.mjs';
import { AppPage } from '../pages/app.mjs';

const suite = useSuite([]);
const dir = mkdtempSync(join(tmpdir(), 'tokenmeter-prompts-'));

function file(name, text) {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

const JSONL = file(
  'p.jsonl',
  [
    JSON.stringify({ prompt: 'alpha prompt one' }),
    JSON.stringify({ messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'beta prompt two' }] }),
    '',
    JSON.stringify({ prompt: 'gamma 第三个提示词' }),
  ].join('\n'),
);

async function open(fields = {}) {
  const page = await suite.browser.newPage({ acceptDownloads: true });
  const app = new AppPage(page);
  await app.open(suite.site.url);
  await app.fillPlan({ 'base-url': suite.sim.baseUrl, levels: '1', 'requests-per-level': 6, 'max-tokens': 4, warmup: 0, ...fields });
  await app.byTestId('prompt-mode').selectOption('file');
  return { page, app };
}

/** What the simulator read of each measured request, in the order they were sent. */
async function sent(doc) {
  const truth = new Map((await suite.sim.truth()).requests.map((t) => [t.response_id, t]));
  return [...doc.records].sort((a, b) => a.id - b.id).map((r) => truth.get(r.response_id));
}

test('a file of prompts and chats is sent as written, in order; a link asks for the file again and checks it', async () => {
  const { page, app } = await open();
  await app.byTestId('prompt-file').setInputFiles(JSONL);
  await app.byTestId('prompt-file-note').waitFor();
  assert.match(await app.byTestId('prompt-file-note').textContent(), /^p\.jsonl: 3 prompts, 1 KiB, sha256 [0-9a-f]{12}…$/);
  await app.run();
  await app.waitForStatus('done');
  const doc = await app.exportJson();
  const sha256 = createHash('sha256').update(readFileSync(JSONL)).digest('hex');
  assert.deepEqual(doc.plan.prompt_file, { name: 'p.jsonl', size_bytes: readFileSync(JSONL).length, count: 3, sha256, format: 'jsonl', order: 'in_order' });
  assert.equal(doc.plan.prompt_mode, 'file');
  assert.ok(!JSON.stringify(doc).includes('alpha prompt one'), 'the run document keeps the file, not its prompts');
  const heads = (await sent(doc)).map((t) => [t.prompt_head, t.n_messages]);
  assert.deepEqual(heads, [
    ['alpha prompt one', 1],
    ['be briefbeta prompt two', 2],
    ['gamma 第三个提示词', 1],
    ['alpha prompt one', 1],
    ['be briefbeta prompt two', 2],
    ['gamma 第三个提示词', 1],
  ]);

  // A link to the plan names the file; the page asks for it, and Run says so.
  await app.byTestId('share-link').click();
  const link = await app.byTestId('share-url').inputValue();
  assert.ok(!link.includes('alpha'), 'a link holds no prompt');
  await page.goto('about:blank');
  await app.open(link);
  assert.equal(await app.byTestId('prompt-mode').inputValue(), 'file');
  assert.match(await app.byTestId('prompt-file-needed').textContent(), /this plan sends the prompts of a file \(p\.jsonl: 3 prompts/);
  await app.run();
  assert.match(await app.byTestId('plan-error').textContent(), /choose that file/);
  assert.equal(await app.status(), 'idle');
  // Another file is said not to be the plan's; the plan's own file is taken quietly.
  await app.byTestId('prompt-file').setInputFiles(file('other.txt', 'one line\n'));
  await app.byTestId('prompt-file-warning').waitFor();
  assert.match(await app.byTestId('prompt-file-warning').textContent(), /not the file the plan named \(p\.jsonl/);
  await page.goto('about:blank');
  await app.open(link);
  await app.byTestId('prompt-file').setInputFiles(JSONL);
  await app.byTestId('prompt-file-note').waitFor();
  assert.equal(await app.byTestId('prompt-file-warning').count(), 0);
  await page.close();
});

test('ShareGPT conversations drawn at random from the seed: the first human turn, after the system turn', async () => {
  const sharegpt = file(
    'chats.json',
    JSON.stringify([
      { id: 'a', conversations: [{ from: 'system', value: 'sys-a ' }, { from: 'human', value: 'question one' }, { from: 'gpt', value: 'answer' }] },
      { id: 'b', conversations: [{ from: 'human', value: 'question two' }, { from: 'gpt', value: 'answer' }, { from: 'human', value: 'later' }] },
    ]),
  );
  const { page, app } = await open({ 'requests-per-level': 20, 'max-tokens': 2 });
  await app.byTestId('prompt-file').setInputFiles(sharegpt);
  await app.byTestId('prompt-order').selectOption('random');
  await app.byTestId('prompt-file-note').waitFor();
  await app.run();
  await app.waitForStatus('done');
  const doc = await app.exportJson();
  assert.equal(doc.plan.prompt_file.format, 'sharegpt');
  assert.equal(doc.plan.prompt_file.order, 'random');
  const heads = (await sent(doc)).map((t) => t.prompt_head);
  assert.ok(heads.every((h) => h === 'sys-a question one' || h === 'question two'), heads.join(' | '));
  assert.ok(new Set(heads).size === 2, `both drawn: ${heads.join(' | ')}`);
  assert.notDeepEqual(heads.slice(0, 4), ['sys-a question one', 'question two', 'sys-a question one', 'question two'], 'not in order');
  await page.close();
});

test('a bad file is refused with its line, in both languages, and nothing is sent', async () => {
  const { page, app } = await open();
  await app.byTestId('prompt-file').setInputFiles(file('bad.jsonl', '{"prompt": "fine"}\n{"prompt": oops}\n'));
  await app.byTestId('prompt-file-error').waitFor();
  assert.match(await app.byTestId('prompt-file-error').textContent(), /^bad\.jsonl, line 2: not JSON/);
  await app.byTestId('lang-zh').click();
  assert.match(await app.byTestId('prompt-file-error').textContent(), /bad\.jsonl 第 2 行：不是 JSON/);
  await app.byTestId('lang-en').click();
  const before = (await suite.sim.truth()).requests.length;
  await app.run();
  assert.match(await app.byTestId('plan-error').textContent(), /choose the file/);
  assert.equal((await suite.sim.truth()).requests.length, before, 'nothing was sent');
  await page.close();
});

test("a ShareGPT file's conversations ask their own human turns, after the answers the simulator gave", async () => {
  const chats = file(
    'turns.json',
    JSON.stringify([
      {
        id: 'long',
        conversations: [
          // Long enough for the simulator's cache blocks (16 tokens) to hold it.
          { from: 'system', value: `sys-long ${'answer briefly and exactly, in plain words. '.repeat(12)}` },
          { from: 'human', value: 'first question' },
          { from: 'gpt', value: "the file's answer, never sent" },
          { from: 'human', value: 'second question' },
          { from: 'gpt', value: 'x' },
          { from: 'human', value: '第三个问题' },
          { from: 'gpt', value: 'y' },
          { from: 'human', value: 'a fourth, past the plan' },
        ],
      },
      { id: 'short', conversations: [{ from: 'human', value: 'only question' }, { from: 'gpt', value: 'z' }] },
    ]),
  );
  const { page, app } = await open({ 'requests-per-level': 8, 'max-tokens': 3 });
  await app.byTestId('prompt-file').setInputFiles(chats);
  await app.byTestId('prompt-file-note').waitFor();
  await app.byTestId('advanced').locator('summary').click();
  await app.fill('turns', 3);
  await app.run();
  await app.waitForStatus('done');
  const doc = await app.exportJson();
  assert.equal(doc.plan.prompt_mode, 'file');
  const truth = new Map((await suite.sim.truth()).requests.map((t) => [t.response_id, t]));
  const sessions = new Map();
  for (const r of [...doc.records].sort((a, b) => a.id - b.id)) {
    assert.equal(r.error, null);
    if (!sessions.has(r.turn.session)) sessions.set(r.turn.session, []);
    sessions.get(r.turn.session).push({ r, t: truth.get(r.response_id) });
  }
  // In order: the long conversation (three turns, the plan's most), the short
  // one (a single question), the long one again: 3 + 1 + 3 + 1 = 8 requests.
  const shapes = [...sessions.values()].map((turns) => turns.map(({ r }) => `${r.turn.index}/${r.turn.n_turns}`).join(' '));
  assert.deepEqual(shapes, ['0/3 1/3 2/3', '0/1', '0/3 1/3 2/3', '0/1']);
  for (const turns of sessions.values()) {
    const told = turns.map(({ t }) => t);
    if (told.length === 1) {
      assert.deepEqual([told[0].prompt_head, told[0].n_messages], ['only question', 1]);
      continue;
    }
    // The system turn and the first question, then one message of the file's
    // each turn, after the simulator's own answer.
    assert.deepEqual(told.map((t) => t.n_messages), [2, 4, 6]);
    assert.ok(told.every((t) => t.prompt_head.startsWith('sys-long answer briefly')), told.map((t) => t.prompt_head).join(' | '));
    assert.ok(told[0].prompt_tail.endsWith('first question'));
    assert.ok(told[1].prompt_tail.endsWith('second question'), told[1].prompt_tail);
    assert.ok(told[2].prompt_tail.endsWith('第三个问题'), told[2].prompt_tail);
    assert.ok(told[1].prompt_tail.includes(told[0].text.slice(-8)), 'the answer the simulator gave goes on in the conversation');
    assert.ok(!told.some((t) => t.prompt_tail.includes("never sent")), "the file's answers are not sent");
    assert.ok(told[1].cached_tokens > 0 && told[2].cached_tokens >= told[1].cached_tokens, `later turns read the earlier ones from the cache: ${told.map((t) => t.cached_tokens)}`);
  }
  // A conversation is whole at its own turns: all four.
  assert.deepEqual([doc.levels[0].sessions.n_sessions, doc.levels[0].sessions.n_whole], [4, 4]);
  await page.close();
});

test("the locustfile of a file's prompts comes with them, held by their SHA-256", async () => {
  const { page, app } = await open();
  await app.byTestId('prompt-file').setInputFiles(JSONL);
  await app.byTestId('prompt-file-note').waitFor();
  const downloads = await app.downloadsOf('export-locust', 2);
  assert.deepEqual(downloads.map((d) => d.suggestedFilename()), ['tokenmeter_locustfile.py', 'tokenmeter_prompts.json']);
  const [locustfile, prompts] = await Promise.all(downloads.map(async (d) => readFileSync(await d.path())));
  const line = locustfile.toString('utf8').split('\n').find((l) => l.startsWith('SETUP = json.loads('));
  const setup = JSON.parse(JSON.parse(line.slice('SETUP = json.loads('.length, -1)));
  assert.equal(setup.prompts.file, 'tokenmeter_prompts.json');
  assert.equal(setup.prompts.sha256, createHash('sha256').update(prompts).digest('hex'));
  assert.equal(setup.prompts.source.sha256, createHash('sha256').update(readFileSync(JSONL)).digest('hex'));
  assert.ok(!locustfile.toString('utf8').includes('alpha prompt one'), 'the locustfile holds no prompt');
  const bodies = JSON.parse(prompts.toString('utf8')).bodies;
  assert.deepEqual(bodies.map((b) => b.messages.at(-1).content), ['alpha prompt one', 'beta prompt two', 'gamma 第三个提示词']);
  assert.equal(await app.byTestId('plan-error').count(), 0);
  await page.close();
});
