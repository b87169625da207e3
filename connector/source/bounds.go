package source

import (
	"math"
	"slices"
	"strings"
)

// Bounds are what a table's manifest says of an object's records (its
// envelope columns' lower and upper bounds): planning drops an object
// they rule out of the replay's time window, offsets, partitions or
// topics without opening it (Stats.FilesPrunedByManifest). Each bound is
// optional; one that is not known rules nothing out.
type Bounds struct {
	// Time bounds the records' Kafka timestamps, in Unix milliseconds
	// as the replay reads them from _kafka.timestamp (a column in
	// microseconds is divided by 1000, rounding toward zero).
	Time IntRange
	// Offset bounds the records' offsets.
	Offset IntRange
	// Partition bounds the records' source partitions.
	Partition IntRange
	// Topic bounds the records' topics, compared byte-wise. Max may be a
	// truncated bound (Iceberg's string bounds may be): a topic that Max
	// is a prefix of is not ruled out by it.
	Topic StringRange
}

// IntRange is a lower and an upper bound, each known or not.
type IntRange struct {
	Min, Max       int64
	HasMin, HasMax bool
}

// StringRange is a lower and an upper bound of strings, each known or
// not.
type StringRange struct {
	Min, Max       string
	HasMin, HasMax bool
}

// lo and hi are the range's bounds, the extreme int64 where unknown.
func (r IntRange) lo() int64 {
	if r.HasMin {
		return r.Min
	}
	return math.MinInt64
}

func (r IntRange) hi() int64 {
	if r.HasMax {
		return r.Max
	}
	return math.MaxInt64
}

// mayHold says whether a topic may lie in the range.
func (r StringRange) mayHold(topic string) bool {
	if r.HasMin && topic < r.Min {
		return false
	}
	return !r.HasMax || topic <= r.Max || strings.HasPrefix(topic, r.Max)
}

// boundsMayMatch says whether an object of bounds b may hold a record the
// replay keeps: false only when a bound rules out the time window, the
// offset window, every partition or every topic replayed.
func (o *Options) boundsMayMatch(b *Bounds) bool {
	if !o.timeMayMatch(b.Time.lo(), b.Time.hi()) {
		return false
	}
	if b.Offset.hi() < o.FromOffset || b.Offset.lo() >= o.EndOffset {
		return false
	}
	if len(o.Partitions) > 0 && !slices.ContainsFunc(o.Partitions, func(p int32) bool {
		return int64(p) >= b.Partition.lo() && int64(p) <= b.Partition.hi()
	}) {
		return false
	}
	if len(o.SourceTopics) > 0 && !slices.ContainsFunc(o.SourceTopics, b.Topic.mayHold) {
		return false
	}
	return true
}
