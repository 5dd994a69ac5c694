#!/usr/bin/env node
// One turn of a support agent whose model asks for several tool calls at
// once (seeds/000's asyncio.gather of tool calls), in Node: Promise.all over
// the calls, each checking a client out of a pg.Pool (npm's pg, pinned in
// package.json; make deps installs it into node_modules/ here).  The pool
// reads PGHOST, PGPORT, ... from the environment; nothing here knows soak.
//
// The same tool as refund_agent.py, with the same flags:
//   (none)         as shipped: SELECT the balance, UPDATE it to what was
//                  read plus the amount
//   --fixed        SELECT ... FOR UPDATE
// Mutants of --fixed, each without one defence:
//   --autocommit   no BEGIN: every statement its own transaction
//   --no-guard     the claim without "AND state = 'open'"
//   --unchecked    the claim's row count unread
import pg from 'pg';

const DISPUTES = ['dsp_1', 'dsp_2', 'dsp_3'];

const flags = process.argv.slice(2);
const known = ['--fixed', '--autocommit', '--no-guard', '--unchecked'];
if (flags.some((f) => !known.includes(f)) || (flags.length > 0 && !flags.includes('--fixed'))) {
  console.error('usage: refund_agent.mjs [--fixed [--autocommit|--no-guard|--unchecked]]');
  process.exit(2);
}
const turn = Number(process.env.SOAK_TURN);

// The model's four calls: one for each of the customer's three disputes and
// one of them again, in an order drawn from SOAK_TURN_SEED (splitmix64).
let state = BigInt(process.env.SOAK_TURN_SEED) & 0xffffffffffffffffn;
function next() {
  state = (state + 0x9e3779b97f4a7c15n) & 0xffffffffffffffffn;
  let z = state;
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & 0xffffffffffffffffn;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & 0xffffffffffffffffn;
  return z ^ (z >> 31n);
}
const pick = (n) => Number(next() % BigInt(n));
const batch = [...DISPUTES, DISPUTES[pick(DISPUTES.length)]];
for (let i = batch.length - 1; i > 0; i--) {
  const j = pick(i + 1);
  [batch[i], batch[j]] = [batch[j], batch[i]];
}
const pool = new pg.Pool();

// The tool: refund a dispute as store credit to its account.
async function issueRefund(dispute) {
  const client = await pool.connect();
  const tx = !flags.includes('--autocommit');
  try {
    if (tx) await client.query('BEGIN');
    const { rows: [{ account_id: account, amount_eur: amount }] } = await client.query(
      'SELECT account_id, amount_eur FROM disputes WHERE id = $1', [dispute]);
    const guard = flags.includes('--no-guard') ? '' : " AND state = 'open'";
    const claim = await client.query(
      `UPDATE disputes SET state = 'refunded' WHERE id = $1${guard}`, [dispute]);
    if (claim.rowCount === 0 && !flags.includes('--unchecked')) {
      if (tx) await client.query('ROLLBACK');
      return `${dispute}: already refunded`;
    }
    const lock = flags.includes('--fixed') ? ' FOR UPDATE' : '';
    const { rows: [{ credit_balance_eur: balance }] } = await client.query(
      `SELECT credit_balance_eur FROM accounts WHERE id = $1${lock}`, [account]);
    await client.query('UPDATE accounts SET credit_balance_eur = $1 WHERE id = $2',
      [balance + amount, account]);
    await client.query(
      'INSERT INTO credit_log (account_id, amount_eur, dispute_id, turn) VALUES ($1, $2, $3, $4)',
      [account, amount, dispute, turn]);
    await client.query(
      "INSERT INTO refunds (dispute_id, amount_eur, state, turn) VALUES ($1, $2, 'settled', $3)",
      [dispute, amount, turn]);
    if (tx) await client.query('COMMIT');
    return `${dispute}: ${amount} EUR credited to account ${account}, balance ${balance + amount} EUR`;
  } catch (e) {
    if (tx) await client.query('ROLLBACK').catch(() => {});
    throw e;
  } finally {
    client.release();
  }
}

// The tool calls at once; what each returns (or throws) goes back to the
// model, as a runtime does.
const said = await Promise.all(batch.map((d) => issueRefund(d).catch((e) => `${d}: error: ${e.message}`)));
await pool.end();
for (const line of said) console.log(line);
process.exit(said.some((s) => s.includes(': error: ')) ? 1 : 0);
