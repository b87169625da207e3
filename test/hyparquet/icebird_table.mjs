// Reads an Iceberg table with icebird (a JavaScript Iceberg reader that
// applies position and equality delete files) and prints the value of one
// column of each live row, one JSON value a line, for pqsink's Go tests
// (table/rowdeletes_test.go).
//
//   node icebird_table.mjs METADATA COLUMN
//
// METADATA is the table's metadata file, a file:// URL or a path. icebird
// reads every object with fetch, which Node does not give file:// URLs:
// here fetch reads those from the local disk (the whole object, status
// 200, which hyparquet takes in place of a range). Avro files (manifest
// lists and manifests) are handed over with their blocks inflated and the
// codec "null": icebird's own inflate (of hyparquet-compressors) fails on
// some deflate blocks that zlib reads, and the container's compression is
// not what these tests check. 64-bit integers are printed as decimal
// strings. A read error is printed to stderr and the
// exit status is 1.
import { readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { inflateRawSync } from 'node:zlib'

const [metadataArg, column] = process.argv.slice(2)
if (!column) {
  process.stderr.write('usage: node icebird_table.mjs METADATA COLUMN\n')
  process.exit(2)
}

// readLong reads an Avro long (zig-zag varint) at pos: [value, next pos].
function readLong(buf, pos) {
  let n = 0n
  let shift = 0n
  for (;;) {
    const b = buf[pos++]
    n |= BigInt(b & 0x7f) << shift
    shift += 7n
    if (!(b & 0x80)) break
  }
  return [Number((n >> 1n) ^ -(n & 1n)), pos]
}

function writeLong(v) {
  let n = BigInt(v)
  n = (n << 1n) ^ (n >> 63n)
  const out = []
  do {
    let b = Number(n & 0x7fn)
    n >>= 7n
    if (n) b |= 0x80
    out.push(b)
  } while (n)
  return Buffer.from(out)
}

// inflateAvro returns an Avro object container file with codec "null":
// buf itself when it is not deflated.
function inflateAvro(buf) {
  if (buf.subarray(0, 4).toString('latin1') !== 'Obj\x01') return buf
  let pos = 4
  const meta = []
  let codec = 'null'
  for (;;) {
    let count
    ;[count, pos] = readLong(buf, pos)
    if (count === 0) break
    if (count < 0) {
      count = -count
      ;[, pos] = readLong(buf, pos) // block size
    }
    for (let i = 0; i < count; i++) {
      let len
      ;[len, pos] = readLong(buf, pos)
      const key = buf.subarray(pos, pos + len).toString('utf8')
      pos += len
      ;[len, pos] = readLong(buf, pos)
      const value = buf.subarray(pos, pos + len)
      pos += len
      if (key === 'avro.codec') codec = value.toString('utf8')
      else meta.push([key, value])
    }
  }
  if (codec !== 'deflate') return buf
  const sync = buf.subarray(pos, pos + 16)
  pos += 16
  const parts = [Buffer.from('Obj\x01', 'latin1'), writeLong(meta.length + 1)]
  for (const [key, value] of [...meta, ['avro.codec', Buffer.from('null')]]) {
    const k = Buffer.from(key, 'utf8')
    parts.push(writeLong(k.length), k, writeLong(value.length), value)
  }
  parts.push(writeLong(0), sync)
  while (pos < buf.length) {
    let count, size
    ;[count, pos] = readLong(buf, pos)
    ;[size, pos] = readLong(buf, pos)
    const data = inflateRawSync(buf.subarray(pos, pos + size))
    pos += size + 16
    parts.push(writeLong(count), writeLong(data.length), data, sync)
  }
  return Buffer.concat(parts)
}

const netFetch = globalThis.fetch
globalThis.fetch = async (url, init) => {
  const u = String(url)
  if (!u.startsWith('file://')) return netFetch(url, init)
  try {
    let body = await readFile(fileURLToPath(u))
    if (u.endsWith('.avro')) body = inflateAvro(body)
    return new Response(body, { status: 200 })
  } catch (err) {
    return new Response(String(err), { status: 404, statusText: 'Not Found' })
  }
}

const { icebergRead } = await import('icebird')

try {
  const path = metadataArg.startsWith('file://') ? fileURLToPath(metadataArg) : metadataArg
  const metadata = JSON.parse(await readFile(path, 'utf8'))
  const rows = await icebergRead({ tableUrl: metadata.location, metadata })
  const out = rows.map(r => {
    const v = r[column]
    return JSON.stringify(typeof v === 'bigint' ? v.toString() : v ?? null)
  })
  process.stdout.write(out.join('\n') + (out.length ? '\n' : ''))
} catch (err) {
  process.stderr.write(`icebird: ${err?.stack ?? err}\n`)
  process.exit(1)
}
