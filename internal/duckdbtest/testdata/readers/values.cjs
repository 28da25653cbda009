// values.cjs READER FILE... — reads each Parquet file (a `walscope table`
// or `walscope rows` file: typed columns) with READER (polars:
// nodejs-polars; arrow-rs: parquet-wasm read back with apache-arrow JS) and
// prints, as JSON, per file and column: the reader's type name and every
// value as text, in row order (null for NULL). The text is the reader's own
// where it has one (polars: each column cast to String inside polars,
// times as nanoseconds since midnight;
// arrow-rs: the stored value: integers and floats as numbers, dates as days
// since 1970, times and timestamps as microseconds, decimals as their
// unscaled integer, binary as hex). The Go test (../../table_readers_test.go)
// compares them with DuckDB's values. A column the reader's JavaScript
// binding cannot hand over is {"type": ..., "unsupported": why}.
"use strict";
const fs = require("fs");

const [reader, ...files] = process.argv.slice(2);

function polarsFile(file) {
  const pl = require("nodejs-polars");
  const df = pl.readParquet(file);
  const out = {};
  for (const name of df.columns) {
    let type;
    try {
      type = String(df.getColumn(name).dtype);
    } catch (e) {
      out[name] = { type: "?", unsupported: e.message };
      continue;
    }
    // Time cast to String drops the fraction of a second: its
    // nanoseconds since midnight instead
    let e = pl.col(name);
    if (type.startsWith("DataType(Time")) e = e.cast(pl.Int64);
    const vals = df.select(e.cast(pl.Utf8)).getColumn(name).toArray();
    out[name] = { type, values: vals.map((v) => (v === undefined ? null : v)) };
  }
  return out;
}

function hex(bytes) {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex");
}

function arrowFile(file) {
  const pw = require("parquet-wasm");
  const arrow = require("apache-arrow");
  const table = arrow.tableFromIPC(pw.readParquet(fs.readFileSync(file)).intoIPCStream());
  const out = {};
  for (const field of table.schema.fields) {
    const vec = table.getChild(field.name);
    const t = field.type;
    const vals = [];
    for (const d of vec.data) {
      for (let i = 0; i < d.length; i++) {
        if (!d.getValid(i)) {
          vals.push(null);
          continue;
        }
        const j = d.offset + i;
        if (arrow.DataType.isInt(t) || arrow.DataType.isDate(t) || arrow.DataType.isTime(t) || arrow.DataType.isTimestamp(t)) {
          vals.push(String(d.values[j])); // raw: days, microseconds
        } else if (arrow.DataType.isFloat(t)) {
          vals.push(String(d.values[j]));
        } else if (arrow.DataType.isBool(t)) {
          vals.push(vec.get(vals.length) ? "true" : "false");
        } else if (arrow.DataType.isUtf8(t)) {
          vals.push(vec.get(vals.length));
        } else if (arrow.DataType.isBinary(t)) {
          vals.push(hex(vec.get(vals.length)));
        } else if (arrow.DataType.isFixedSizeBinary(t)) {
          vals.push(hex(d.values.subarray(j * t.byteWidth, (j + 1) * t.byteWidth)));
        } else if (arrow.DataType.isDecimal(t)) {
          // little-endian two's complement, 32-bit words
          const w = d.values.subarray(j * 4, j * 4 + 4);
          let x = 0n;
          for (let k = 3; k >= 0; k--) x = (x << 32n) | BigInt(w[k]);
          if (x >= 1n << 127n) x -= 1n << 128n;
          vals.push(x.toString());
        } else {
          throw new Error(`${file}: ${field.name}: type ${t} not read here`);
        }
      }
    }
    out[field.name] = { type: String(t), values: vals };
  }
  return out;
}

const read = { polars: polarsFile, "arrow-rs": arrowFile }[reader];
if (!read) {
  console.error(`unknown reader ${reader}`);
  process.exit(2);
}
const out = {};
for (const f of files) out[f] = read(f);
console.log(JSON.stringify(out));
