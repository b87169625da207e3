// Test-only DuckDB query server for pqsink's Go tests.
//
// Protocol: one JSON request per line on stdin, {"sql": "..."}; one JSON
// response per line on stdout, in request order:
//
//   {"columns": [name, ...], "types": [duckdb type string, ...], "rows": [[v, ...], ...]}
//   {"error": "message"}
//
// Values are converted so that nothing is lost on the way to Go:
//
//   BOOLEAN                           true / false
//   TINYINT..INTEGER, UTINYINT..UINTEGER  JSON numbers (exact in a double)
//   BIGINT, UBIGINT, HUGEINT, UHUGEINT, BIGNUM, DECIMAL
//                                     strings, exact ("-12.3400000000" keeps the scale)
//   FLOAT, DOUBLE                     JSON numbers printed as the shortest text that
//                                     round-trips the double (a FLOAT is widened to
//                                     double first, exactly); the non-finite values
//                                     and negative zero as the strings "NaN",
//                                     "Infinity", "-Infinity" and "-0"
//   VARCHAR, ENUM, UUID, BIT          strings (UUID in canonical 8-4-4-4-12 form)
//   BLOB                              standard base64 with padding
//   DATE                              "YYYY-MM-DD"
//   TIME, TIME_NS                     "HH:MM:SS[.fraction]"
//   TIMESTAMP, _S, _MS, _NS           "YYYY-MM-DD HH:MM:SS[.fraction]"
//   TIMESTAMP WITH TIME ZONE          "YYYY-MM-DD HH:MM:SS[.fraction]+00" (session TimeZone is UTC)
//   TIME WITH TIME ZONE               "HH:MM:SS[.fraction]+HH[:MM]"
//                                     These are DuckDB's own text forms, identical to
//                                     CAST(x AS VARCHAR): ISO 8601 with a space between
//                                     date and time; the fraction has 1-6 (9 for _NS)
//                                     digits with trailing zeros removed, and is absent
//                                     for whole seconds; infinities print as
//                                     "infinity"/"-infinity"; BC dates end in " (BC)".
//   INTERVAL                          {"months": n, "days": n, "micros": "n"}
//   LIST, ARRAY                       JSON arrays
//   STRUCT                            JSON objects keyed by field name
//   MAP                               [{"key": k, "value": v}, ...] in map order
//   UNION                             {"tag": name, "value": v}
//   VARIANT                           the JSON form of the value it holds, with the
//                                     same rules applied to the values inside
//   NULL (any type)                   null
//
// One in-memory DuckDB instance and one connection serve the whole process,
// with TimeZone set to UTC, and threads set to $PQSINK_DUCKDB_THREADS when
// that is set. Requests run one at a time. The process exits when stdin
// closes.

import { createInterface } from 'node:readline';
import {
  DuckDBInstance,
  DuckDBTypeId,
  DuckDBBlobValue,
  JsonDuckDBValueConverter,
} from '@duckdb/node-api';

// convert extends the library's JSON-safe converter where it is lossy or
// ambiguous for our purposes. Nested values recurse through convert, so the
// same rules apply inside LIST, STRUCT, MAP, UNION and VARIANT.
function convert(value, type, converter) {
  if (value == null) {
    return null;
  }
  switch (type.typeId) {
    case DuckDBTypeId.BLOB:
      if (value instanceof DuckDBBlobValue) {
        return Buffer.from(value.bytes).toString('base64');
      }
      break;
    case DuckDBTypeId.FLOAT:
    case DuckDBTypeId.DOUBLE:
      // JSON.stringify prints -0 as 0 and refuses NaN and the infinities.
      if (Object.is(value, -0)) {
        return '-0';
      }
      if (!Number.isFinite(value)) {
        return String(value);
      }
      return value;
  }
  return JsonDuckDBValueConverter(value, type, converter);
}

async function main() {
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  // Deterministic output: TIMESTAMPTZ values print in UTC.
  await connection.run("SET TimeZone = 'UTC'");
  if (process.env.PQSINK_DUCKDB_THREADS) {
    await connection.run(`SET threads = ${Number(process.env.PQSINK_DUCKDB_THREADS)}`);
  }

  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    if (line.trim() === '') {
      continue;
    }
    process.stdout.write(JSON.stringify(await answer(connection, line)) + '\n');
  }
  connection.closeSync();
  instance.closeSync();
}

async function answer(connection, line) {
  try {
    const request = JSON.parse(line);
    if (typeof request.sql !== 'string') {
      return { error: 'request has no "sql" string' };
    }
    const reader = await connection.runAndReadAll(request.sql);
    const types = [];
    for (let i = 0; i < reader.columnCount; i++) {
      types.push(reader.columnType(i).toString());
    }
    return {
      columns: reader.columnNames(),
      types,
      rows: reader.convertRows(convert),
    };
  } catch (err) {
    return { error: err instanceof Error ? err.message : String(err) };
  }
}

main().catch((err) => {
  process.stderr.write(`duckdb server: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
