// Package variant reads and writes the Parquet VARIANT binary encoding
// (VariantEncoding.md): a metadata blob holding the dictionary of field
// names, and a value blob holding a self-describing value that refers to
// names by id.
//
// # Writing
//
// An Encoder converts JSON to a Variant in one pass over the tokens of
// internal/jsonscan, without building a tree of Go values. A Builder does
// the same for typed values (Avro, Kafka envelopes, reconstruction from
// shredded columns). Both write canonical Variants:
//
//   - The dictionary is de-duplicated and sorted by name bytes, with
//     sorted_strings set (an empty dictionary is written as the three
//     bytes 01 00 00, as other writers do), and uses the smallest offset
//     size that fits.
//   - Object fields are ordered by name, and their values are written in
//     that same order, so field offsets increase. Field ids, offsets and
//     element counts use the smallest width that fits each object or
//     array; is_large is set only above 255 elements.
//   - Strings shorter than 64 bytes use the short string encoding.
//   - A repeated field name in one object is an error unless the
//     LastKeyWins option is given.
//
// JSON numbers become:
//
//   - a literal without fraction or exponent that fits in int64: the
//     smallest of int8, int16, int32, int64 that holds it;
//   - any other literal whose value is unscaled × 10^-scale with at most
//     38 significant digits and 0 <= scale <= 38, where scale is the
//     number of digits written after the point minus the exponent (a
//     negative scale is folded into the unscaled value, so 1.5e3 is 1500
//     with scale 0, and 1.50 keeps scale 2): decimal4 when both the
//     digits and the scale are at most 9, decimal8 up to 18, decimal16 up
//     to 38 (so that a reader mapping it to DECIMAL(p, s) gets s <= p);
//   - a negative zero with a fraction or exponent (-0.0, -0e5): the
//     double -0.0, the only type that keeps its sign (the integer -0 is
//     int8 0);
//   - anything else in exponent form within the range of a normal double
//     (1.5e300, 2.5e-50): the nearest double, which is how JSON producers
//     write doubles.
//
// A number is never changed without a word. These are errors, which
// convert handles by its --errors policy:
//
//   - a literal beyond the range of a double (1e400);
//   - a literal written without an exponent whose significant digits are
//     more than the 38 a decimal keeps (an integer of 39 digits, or
//     0.1234567890123456789012345678901234567890): a double would round
//     it;
//   - a nonzero literal that underflows: one whose double is 0 (1e-400),
//     or a subnormal double whose shortest form is not the literal
//     (4.0000000001e-320; 5e-324, the shortest form of the smallest
//     subnormal, is kept), since a double would lose digits.
//
// The LossyNumbers option (pqsink convert --variant-lossy-numbers) turns
// the last two into the nearest double instead; the error wraps
// ErrInexactNumber.
//
// Leading zeros of the unscaled value do not count as digits (0.001 is
// decimal4 1 with scale 3); trailing zeros do, since they are written.
//
// # Reading
//
// Value is a view over (metadata, value) bytes with typed accessors,
// object field lookup by name (binary search), array indexing and path
// lookup (ParsePath).
//
// # Shredding
//
// A Shape describes which parts of a Variant are shredded into typed
// columns (VariantShredding.md): given by the user (ParseShapePaths), or
// inferred from sample values by an Inferrer. Shape.Match, ScalarOf and
// SplitObject split a value into its typed parts and the residual value:
// a decimal is typed only in a decimal column of its own scale, so that
// it reads back as written (1.5 stays in the value of a DECIMAL(9,2)
// column rather than read back as 1.50); Builder.Unshred puts a Variant back together from a Shredded tree of
// typed parts and residual bytes, as a reader does. A shredder that fills
// the typed columns straight from JSON, without building the Variant
// (rowgroup.VariantShredder), writes the metadata with a Dictionary and
// the values that do not fit with AppendNumber and AppendString.
//
// # Memory
//
// The Encoder and the Builder keep no tree: each scalar is written once,
// where it ends up, and a container's header and offsets are put in front
// of its elements when it ends (object fields are moved into name order
// then). While an object is open each field costs its name id and start;
// an array's elements cost nothing beyond their bytes. The Encoder writes
// into the caller's slice, so a record's Variant takes its own size plus
// the open objects' fields.
//
// AppendJSON renders a Variant as JSON:
//
//   - integers and decimals as exact JSON numbers (decimals keep their
//     scale: 1.50 stays 1.50);
//   - float and double as the shortest number that reads back to the same
//     value (exponent form below 1e-6 and from 1e21), NaN and the
//     infinities as the strings "NaN", "Infinity" and "-Infinity";
//   - binary as a base64 (standard alphabet, padded) string;
//   - date as "YYYY-MM-DD";
//   - timestamps as RFC 3339 strings with 6 (micros) or 9 (nanos)
//     fraction digits, ending in "Z" for the UTC types and with no zone
//     for the NTZ types;
//   - time_ntz as "HH:MM:SS.ffffff";
//   - uuid as the canonical lower-case 8-4-4-4-12 string;
//   - object fields in the stored (name) order.
//
// # Untrusted input
//
// Every reader in this package checks offsets and lengths before using
// them and never panics on malformed bytes. Validate checks a whole
// Variant; AppendJSON makes the same checks as it goes. Nesting is
// bounded by MaxDepth, and elements of one object or array may not share
// bytes, so the work done is linear in the input size.
package variant
