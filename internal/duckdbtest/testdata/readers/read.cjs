// read.cjs READER DIR TABLE... — reads every Parquet file of each table of
// a walscope export with READER (polars: nodejs-polars, the Rust Parquet
// implementation polars has; arrow-rs: parquet-wasm, arrow-rs's Parquet
// reader compiled to WebAssembly, its result read with apache-arrow JS) and
// prints, as JSON, per table: the rows, and per column its type as the
// reader names it, its nulls and a sum (integers and timestamps: the sum of
// the values, in microseconds for timestamps; booleans: the trues; strings:
// the sum of their lengths). Sums are decimal strings (BigInt). The Go test
// (../../readers_test.go) compares them with DuckDB's.
"use strict";
const fs = require("fs");
const path = require("path");

const [reader, dir, ...tables] = process.argv.slice(2);

// files lists the table's finished Parquet files (not the dot files a
// writer leaves while it writes).
function files(d) {
  const out = [];
  for (const e of fs.readdirSync(d, { withFileTypes: true })) {
    if (e.name.startsWith(".")) continue;
    const p = path.join(d, e.name);
    if (e.isDirectory()) out.push(...files(p));
    else if (e.name.endsWith(".parquet")) out.push(p);
  }
  return out.sort();
}

function addTo(cols, name, type, nulls, sum) {
  const c = cols[name] || (cols[name] = { type, nulls: 0n, sum: 0n });
  c.nulls += BigInt(nulls);
  c.sum += sum;
}

function polarsFile(file, t) {
  const pl = require("nodejs-polars");
  const df = pl.readParquet(file);
  t.rows += BigInt(df.height);
  for (const name of df.columns) {
    let s = df.getColumn(name);
    const type = String(s.dtype);
    let sum = 0n;
    if (type.includes("Datetime")) s = s.cast(pl.Int64); // microseconds, as stored
    const vals = s.toArray();
    for (const v of vals) {
      if (v === null || v === undefined) continue;
      if (typeof v === "string") sum += BigInt(v.length);
      else if (typeof v === "boolean") sum += v ? 1n : 0n;
      else sum += BigInt(v);
    }
    addTo(t.columns, name, type, s.nullCount(), sum);
  }
}

function arrowFile(file, t) {
  const pw = require("parquet-wasm");
  const arrow = require("apache-arrow");
  const table = arrow.tableFromIPC(pw.readParquet(fs.readFileSync(file)).intoIPCStream());
  t.rows += BigInt(table.numRows);
  for (const field of table.schema.fields) {
    const vec = table.getChild(field.name);
    const type = String(field.type);
    let sum = 0n;
    let nulls = 0;
    for (const d of vec.data) {
      if (d.offset !== 0) throw new Error(`${file}: ${field.name}: sliced data`);
      for (let i = 0; i < d.length; i++) {
        if (!d.getValid(i)) {
          nulls++;
          continue;
        }
        if (arrow.DataType.isInt(d.type) || arrow.DataType.isTimestamp(d.type)) {
          sum += BigInt(d.values[i]); // raw values: microseconds for timestamps
        }
      }
    }
    if (arrow.DataType.isBool(field.type) || arrow.DataType.isUtf8(field.type) || arrow.DataType.isDictionary(field.type)) {
      for (let i = 0; i < vec.length; i++) {
        const v = vec.get(i);
        if (v === null) continue;
        sum += typeof v === "string" ? BigInt(v.length) : v ? 1n : 0n;
      }
    }
    addTo(t.columns, field.name, type, nulls, sum);
  }
}

const read = { polars: polarsFile, "arrow-rs": arrowFile }[reader];
if (!read) {
  console.error(`unknown reader ${reader}`);
  process.exit(2);
}
const out = {};
for (const table of tables) {
  const t = { files: 0, rows: 0n, columns: {} };
  for (const f of files(path.join(dir, table))) {
    read(f, t);
    t.files++;
  }
  out[table] = t;
}
console.log(JSON.stringify(out, (k, v) => (typeof v === "bigint" ? v.toString() : v), 1));
