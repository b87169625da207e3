// Runs SQL statements given as arguments, one after another, in one
// in-memory DuckDB, and exits. Used by pqsink's benchmarks to time DuckDB
// doing the same job as pqsink in a process of its own.
//
//   node exec.mjs "SET threads = 1" "COPY (...) TO '...' (FORMAT parquet)"
import { DuckDBInstance } from '@duckdb/node-api';

const instance = await DuckDBInstance.create(':memory:');
const connection = await instance.connect();
for (const sql of process.argv.slice(2)) {
  await connection.run(sql);
}
connection.closeSync();
