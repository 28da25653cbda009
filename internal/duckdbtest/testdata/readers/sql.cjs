// sql.cjs DIR QUERIES.json — runs each query (README's, as printed) with
// polars' SQL over the tables of the walscope export in DIR (records,
// checkpoints, blocks: views of their Parquet files, hive partitions read
// as README's Python does) and prints, as JSON, each query's rows as arrays
// of strings (null for null). The Go test compares them with DuckDB's.
"use strict";
const fs = require("fs");
const path = require("path");
const pl = require("nodejs-polars");

const [dir, queriesFile] = process.argv.slice(2);
const queries = JSON.parse(fs.readFileSync(queriesFile, "utf8"));
const tables = {};
for (const t of ["records", "checkpoints", "blocks"]) {
  if (fs.existsSync(path.join(dir, t))) {
    tables[t] = pl.scanParquet(path.join(dir, t, "**", "*.parquet"), { hivePartitioning: true });
  }
}
const ctx = pl.SQLContext(tables);
const out = queries.map((q) => {
  const df = ctx.execute(q).collectSync();
  const cols = df.columns.map((c) => df.getColumn(c).toArray());
  const rows = [];
  for (let i = 0; i < df.height; i++) {
    rows.push(cols.map((c) => (c[i] === null || c[i] === undefined ? null : String(c[i]))));
  }
  return rows;
});
console.log(JSON.stringify(out));
