#!/usr/bin/env node
// One turn of a refund agent, written against the openai SDK the way its
// documentation shows: the client reads OPENAI_BASE_URL and OPENAI_API_KEY
// from the environment, streams each answer, and runs the tool calls the
// model asks for until it answers in words.  Nothing in it knows soak.
//
// Its tool, issue_refund, asks a payment provider (examples/refunds) to
// refund a dispute, and gives up after 600 ms: a provider slower than that
// may still have refunded (seeds/000).  When the tool says so, the model
// may ask for the refund again -- and, without an idempotency key
// (--idempotency-key), the provider refunds twice.
import { execFileSync } from 'node:child_process';
import OpenAI from 'openai';

const turn = Number(process.env.SOAK_TURN ?? 0);
const dispute = `dsp_${turn % 4}`;	// each turn its own dispute
const withKey = process.argv.includes('--idempotency-key');
const provider = process.env.SOAK_PROXY_PROVIDER ?? '127.0.0.1:8080';

// psql with the connection libpq reads from the environment; values go as
// psql variables, never into the SQL text.
function psql(sql, vars = {}) {
  const args = ['-XAtq', '-v', 'ON_ERROR_STOP=1'];
  for (const [k, v] of Object.entries(vars)) args.push('-v', `${k}=${v}`);
  return execFileSync('psql', args, { input: sql, encoding: 'utf8' }).trim();
}

let attempt = 0;
async function issueRefund({ dispute_id }) {
  const [amount, world] = psql(
    "SELECT amount_eur, (SELECT epoch FROM world) FROM disputes WHERE id = :'d'",
    { d: dispute_id }).split('|');
  if (world === undefined) return `error: there is no dispute ${dispute_id}`;
  const headers = {
    'Content-Type': 'application/json',
    'X-World': world,		// which reset of the schema this is (the provider's rule)
    'X-Sender': `t${turn}/a${++attempt}`,
  };
  if (withKey) headers['Idempotency-Key'] = `refund-${dispute_id}`;
  try {
    const r = await fetch(`http://${provider}/refunds`, {
      method: 'POST', headers, signal: AbortSignal.timeout(600),
      body: JSON.stringify({ dispute_id, amount_eur: Number(amount) }),
    });
    await r.text();
    return r.ok ? 'ok: the refund is settled' : `error: the provider answered ${r.status}`;
  } catch {
    return 'error: the provider did not answer in time';
  }
}

const tools = [{
  type: 'function',
  function: {
    name: 'issue_refund',
    description: 'Refund the amount of a dispute to its account.',
    parameters: {
      type: 'object',
      properties: { dispute_id: { type: 'string' } },
      required: ['dispute_id'],
    },
  },
}];

const client = new OpenAI();
const messages = [
  { role: 'system', content: 'You settle refund requests with the issue_refund tool.' },
  { role: 'user', content: `A customer asks: please refund dispute ${dispute}.` },
];
let refunded = false;
for (let step = 0; step < 6; step++) {
  const stream = client.chat.completions.stream({ model: 'gpt-4o-mini', messages, tools });
  const reply = (await stream.finalChatCompletion()).choices[0].message;
  messages.push({ role: 'assistant', content: reply.content, tool_calls: reply.tool_calls });
  if (!reply.tool_calls?.length) {
    console.log(reply.content);
    break;
  }
  for (const call of reply.tool_calls) {
    const result = await issueRefund(JSON.parse(call.function.arguments));
    refunded ||= result.startsWith('ok');
    messages.push({ role: 'tool', tool_call_id: call.id, content: result });
  }
}
if (refunded)
  psql("UPDATE disputes SET refunded = true WHERE id = :'d'", { d: dispute });
