#!/usr/bin/env node
// xrpl.js's SHAMap under node, for XRPL parity beside shamap-bench:
//   1. the state map of data/ledger-38129.json (261 entries): build, root,
//      checked against the ledger's account_hash;
//   2. synthetic maps of N uniformly random keys with DATA_LEN-byte data:
//      build (addItem) and root (.hash), timed separately, with memory.
//
//   npm install && node --expose-gc bench.js [--entries 100000,1000000] [--data-len 64] [--json]
//
// xrpl.js keeps keys and data as hex strings and recomputes every hash on
// each `.hash` read (no caching, no updates, no gets), so build + root is
// the one workload it shares with shamap.

'use strict';

const fs = require('fs');
const path = require('path');
const crypto = require('crypto');
const SHAMapModule = require('xrpl/dist/npm/utils/hashes/SHAMap');

const SHAMap = SHAMapModule.default;
const { NodeType } = SHAMapModule;

function arg(name, dflt) {
  const i = process.argv.indexOf(name);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : dflt;
}

const entriesList = arg('--entries', '100000,1000000').split(',').map(Number);
const dataLen = Number(arg('--data-len', '64'));
const json = process.argv.includes('--json');
const ledgerFile = arg(
  '--ledger',
  path.join(__dirname, '..', '..', '..', 'data', 'ledger-38129.json'),
);

function gc() {
  if (global.gc) {
    global.gc();
    global.gc();
  }
}

function ms(t0) {
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

function timeMap(items, reps) {
  // Best of `reps`: build a fresh map, then read its root.
  let best = null;
  for (let r = 0; r < reps; r++) {
    gc();
    const before = process.memoryUsage();
    let t0 = process.hrtime.bigint();
    const map = new SHAMap();
    for (const [index, data] of items) {
      map.addItem(index, data, NodeType.ACCOUNT_STATE);
    }
    const build = ms(t0);
    t0 = process.hrtime.bigint();
    const root = map.hash;
    const hash = ms(t0);
    gc();
    const after = process.memoryUsage();
    const res = {
      build_ms: build,
      root_ms: hash,
      total_ms: build + hash,
      root: root.toUpperCase(),
      heap_bytes_per_entry: (after.heapUsed - before.heapUsed) / items.length,
      rss_bytes_per_entry: (after.rss - before.rss) / items.length,
    };
    if (best === null || res.total_ms < best.total_ms) {
      best = res;
    }
    // Keep `map` alive until after the memory reading.
    if (map.hash.length !== 64) throw new Error('unexpected hash');
  }
  return best;
}

const rows = [];

// 1. The real ledger.
const ledger = JSON.parse(fs.readFileSync(ledgerFile, 'utf8')).ledger;
const state = ledger.accountState.map((e) => [e.index, e.data]);
const real = timeMap(state, 20);
real.workload = `ledger ${ledger.ledger_index} state map (${state.length} entries)`;
real.entries = state.length;
real.expected = ledger.account_hash.toUpperCase();
real.match = real.root === real.expected;
rows.push(real);

// 2. Synthetic maps.
for (const n of entriesList) {
  const items = new Array(n);
  for (let i = 0; i < n; i++) {
    items[i] = [
      crypto.randomBytes(32).toString('hex').toUpperCase(),
      crypto.randomBytes(dataLen).toString('hex').toUpperCase(),
    ];
  }
  const res = timeMap(items, n <= 100000 ? 3 : 1);
  res.workload = `random keys, ${dataLen} B data: build N + root`;
  res.entries = n;
  rows.push(res);
}

if (json) {
  console.log(JSON.stringify({ engine: 'xrpl.js', version: require('xrpl/package.json').version, node: process.version, hash: 'SHA512Half (node crypto)', rows }, null, 1));
} else {
  console.log(`xrpl.js ${require('xrpl/package.json').version} SHAMap under node ${process.version}; SHA512Half`);
  console.log('');
  console.log('| workload | entries | build | root | build + root | ns/entry | heap B/entry | RSS Δ B/entry | root |');
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const r of rows) {
    const check = r.expected === undefined ? '' : r.match ? ' (match)' : ` (MISMATCH, expected ${r.expected})`;
    console.log(
      `| ${r.workload} | ${r.entries} | ${r.build_ms.toFixed(2)} ms | ${r.root_ms.toFixed(2)} ms | ${r.total_ms.toFixed(2)} ms | ${((r.total_ms * 1e6) / r.entries).toFixed(0)} | ${r.heap_bytes_per_entry.toFixed(0)} | ${r.rss_bytes_per_entry.toFixed(0)} | ${r.root.slice(0, 16)}…${check} |`,
    );
  }
}
if (!real.match) {
  process.exitCode = 1;
}
