// Writes an Avro object container file with avsc, an Avro implementation
// independent of pqsink and goavro, for pqsink's tests.
//
//   node write.mjs SCHEMA.avsc RECORDS.json OUT.avro CODEC [BLOCK_SIZE]
//
// RECORDS.json is a JSON array of records, each the base64 of its Avro
// binary encoding in SCHEMA. avsc decodes every record into its own values
// and encodes it again in the container, so the file's bytes are avsc's:
// its block framing, sync markers, codec and value encoding. Longs are
// BigInts, so that 64-bit values survive JavaScript's numbers. Logical
// types are read as their underlying types and kept in the header's schema.
//
// CODEC is null, deflate (avsc's own), snappy (snappyjs, with the CRC32 of
// the uncompressed block that the specification requires) or zstandard
// (zstd-codec: Node 20's zlib has no Zstandard).
import { readFileSync, createWriteStream } from 'node:fs';
import { crc32 } from 'node:zlib';
import { finished } from 'node:stream/promises';
import avro from 'avsc';
import snappy from 'snappyjs';
import zstdCodec from 'zstd-codec';

const [schemaPath, recordsPath, outPath, codec, blockSize] = process.argv.slice(2);
if (!codec) {
  console.error('usage: node write.mjs SCHEMA.avsc RECORDS.json OUT.avro CODEC [BLOCK_SIZE]');
  process.exit(2);
}

const longType = avro.types.LongType.__with({
  fromBuffer: (buf) => buf.readBigInt64LE(),
  toBuffer: (n) => {
    const buf = Buffer.alloc(8);
    buf.writeBigInt64LE(BigInt(n));
    return buf;
  },
  fromJSON: BigInt,
  toJSON: Number,
  isValid: (n) => typeof n === 'bigint',
  compare: (a, b) => (a === b ? 0 : a < b ? -1 : 1),
});

const schema = JSON.parse(readFileSync(schemaPath, 'utf8'));
// Every long, with a logicalType attribute or not, is a BigInt long.
const typeHook = (attrs) => {
  if (attrs === 'long' || (attrs && attrs.type === 'long')) {
    return longType;
  }
  return undefined;
};
const type = avro.Type.forSchema(schema, { registry: { long: longType }, typeHook, wrapUnions: true });

const zstd = await new Promise((resolve) => zstdCodec.ZstdCodec.run((z) => resolve(new z.Simple())));
const codecs = {
  null: (buf, cb) => cb(null, buf),
  deflate: avro.streams.BlockEncoder.defaultCodecs().deflate,
  snappy: (buf, cb) => {
    const out = Buffer.from(snappy.compress(buf));
    const sum = Buffer.alloc(4);
    sum.writeUInt32BE(crc32(buf) >>> 0);
    cb(null, Buffer.concat([out, sum]));
  },
  zstandard: (buf, cb) => cb(null, Buffer.from(zstd.compress(buf, 3))),
};
if (!codecs[codec]) {
  console.error(`unknown codec ${codec}`);
  process.exit(2);
}

const records = JSON.parse(readFileSync(recordsPath, 'utf8'));
// The encoder keeps the schema as given for the header, and builds a type
// from it; it is given ours, whose longs are BigInts.
const encoder = new avro.streams.BlockEncoder(schema, {
  codec,
  codecs,
  blockSize: blockSize ? Number(blockSize) : undefined,
});
encoder._type = type;
const out = createWriteStream(outPath);
encoder.pipe(out);
encoder.on('typeError', (err) => {
  console.error(`avsc: ${err.message}`);
  process.exit(1);
});
for (const b64 of records) {
  encoder.write(type.fromBuffer(Buffer.from(b64, 'base64')));
}
encoder.end();
await finished(out);
