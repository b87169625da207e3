// Package archive is the archive's contract shared by the sink and replay:
// how object keys are made from the path template and read back, the
// footer entries (pqsink.kafka.*) that say which Kafka records a file
// holds, the keys under which a file's footer carries its records' schema
// (so that envelope, merge and compact tell them apart without a format
// package), the _pqsink/ prefixes of pqsink's own objects, and the format of
// the commit metadata that carries a partition's skip set.
//
// The sink (package connector) writes what this package describes; replay
// (package connector/source) reads it back; config validates the path
// template with it. It does no I/O of its own.
package archive
