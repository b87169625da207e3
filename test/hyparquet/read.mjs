// Reads one Parquet file with hyparquet and prints its rows as JSON lines,
// for pqsink's Go tests (test/hyparquet_test.go).
//
//   node read.mjs READER FILE
//
// READER is "hyparquet", the version this package pins, or "icebird", the
// older hyparquet that icebird (a JavaScript Iceberg reader) pins and reads
// every data file of a table with. Compressed pages are decompressed with
// hyparquet-compressors, as icebird does.
//
// Values are printed losslessly, in forms the Go side expects:
//   - 64-bit integers (BigInt) as decimal strings;
//   - other numbers as JSON numbers, except NaN, Infinity, -Infinity and
//     negative zero, which JSON has no number for: the strings "NaN",
//     "Infinity", "-Infinity" and "-0";
//   - byte arrays without a string annotation as {"$bytes": base64};
//   - DATE as the number of days since the epoch, timestamps as the
//     integer count of their unit (hyparquet's parsers, overridden);
//   - groups as objects, lists as arrays, and maps as objects (hyparquet
//     turns MAP into a JavaScript object keyed by the key's text).
// A read error is printed to stderr and the exit status is 1.
const [readerName, file] = process.argv.slice(2)
if (!file) {
  process.stderr.write('usage: node read.mjs hyparquet|icebird FILE\n')
  process.exit(2)
}

let modules
if (readerName === 'hyparquet') {
  modules = {
    hyparquet: await import('hyparquet'),
    compressors: await import('hyparquet-compressors'),
  }
} else if (readerName === 'icebird') {
  // icebird depends on an exact, older hyparquet, which npm installs under
  // icebird's own node_modules since this package pins a newer one.
  const base = new URL('./node_modules/icebird/node_modules/', import.meta.url)
  modules = {
    hyparquet: await import(new URL('hyparquet/src/node.js', base)),
    compressors: await import(new URL('hyparquet-compressors/src/index.js', base)),
  }
} else {
  process.stderr.write(`unknown reader ${readerName}\n`)
  process.exit(2)
}

const { asyncBufferFromFile, parquetReadObjects } = modules.hyparquet
const { compressors } = modules.compressors

const parsers = {
  timestampFromMilliseconds: v => BigInt(v),
  timestampFromMicroseconds: v => BigInt(v),
  timestampFromNanoseconds: v => BigInt(v),
  dateFromDays: v => v,
}

function lossless(v) {
  if (v === null || v === undefined) return null
  switch (typeof v) {
    case 'bigint':
      return v.toString()
    case 'number':
      if (Number.isNaN(v)) return 'NaN'
      if (v === Infinity) return 'Infinity'
      if (v === -Infinity) return '-Infinity'
      if (Object.is(v, -0)) return '-0'
      return v
    case 'string':
    case 'boolean':
      return v
  }
  if (v instanceof Uint8Array) return { $bytes: Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64') }
  if (v instanceof Date) return { $date: v.toISOString() }
  if (Array.isArray(v) || ArrayBuffer.isView(v)) return Array.from(v, lossless)
  const out = {}
  for (const [k, e] of Object.entries(v)) out[k] = lossless(e)
  return out
}

try {
  const buffer = await asyncBufferFromFile(file)
  const rows = await parquetReadObjects({ file: buffer, compressors, parsers, utf8: true })
  const out = []
  for (const row of rows) out.push(JSON.stringify(lossless(row)))
  process.stdout.write(out.length ? out.join('\n') + '\n' : '')
} catch (err) {
  process.stderr.write(`${err?.stack ?? err}\n`)
  process.exit(1)
}
