package config

import (
	"bytes"
	"net/url"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Redacted renders the effective configuration, defaults included, as
// YAML for the startup log, with every secret shown as "[redacted]". The
// text is itself a valid config: a literal $ is written as $$, and relative
// paths appear resolved.
func (c *Config) Redacted() string {
	k := c.Kafka
	kafka := yMap(
		"brokers", yStrs(k.Brokers),
		"group", yStr(k.Group),
	)
	if k.TopicRegex != "" {
		kafka.add("topic_regex", yStr(k.TopicRegex))
	} else {
		kafka.add("topics", yStrs(k.Topics))
	}
	kafka.add("start", yStr(k.Start), "client_id", yStr(k.ClientID))
	if k.InstanceID != "" {
		kafka.add("instance_id", yStr(k.InstanceID))
	}
	if k.SASL != nil {
		kafka.add("sasl", yMap(
			"mechanism", yStr(k.SASL.Mechanism),
			"username", yStr(k.SASL.Username),
			"password", ySecret(k.SASL.Password),
		))
	}
	if k.TLS != nil {
		kafka.add("tls", yMap(
			"ca_file", yStr(k.TLS.CAFile),
			"cert_file", yStr(k.TLS.CertFile),
			"key_file", yStr(k.TLS.KeyFile),
			"insecure_skip_verify", yBool(k.TLS.InsecureSkipVerify),
			"server_name", yStr(k.TLS.ServerName),
		))
	}
	kafka.add(
		"fetch", yMap(
			"min_bytes", ySize(k.Fetch.MinBytes),
			"max_bytes", ySize(k.Fetch.MaxBytes),
			"max_wait", yDuration(k.Fetch.MaxWait),
		),
		"session_timeout", yDuration(k.SessionTimeout),
		"heartbeat_interval", yDuration(k.HeartbeatInterval),
		"rebalance_timeout", yDuration(k.RebalanceTimeout),
		"commit_timeout", yDuration(k.CommitTimeout),
		"topic_refresh", yDuration(k.TopicRefresh),
	)

	s := c.Store
	store := yMap(
		"url", yStr(s.URL),
		"endpoint", yStr(s.Endpoint),
		"region", yStr(s.Region),
		"path_style", yBool(s.PathStyle),
		"access_key", yStr(s.AccessKey),
		"secret_key", ySecret(s.SecretKey),
		"session_token", ySecret(s.SessionToken),
		"part_size", ySize(s.PartSize),
		"conditional_writes", yBool(s.ConditionalWrites),
		"sse", yStr(s.SSE),
		"sse_kms_key_id", yStr(s.SSEKMSKeyID),
		"stale_upload_age", yDuration(s.StaleUploadAge),
		"max_retries", yInt(int64(s.MaxRetries)),
		"max_retry_wait", yDuration(s.MaxRetryWait),
	)

	format := redactFormat(c.Format)

	p := c.Parquet
	root := yMap(
		"kafka", kafka,
		"store", store,
		"format", format,
		"envelope", yBool(c.Envelope),
		"path", yStr(c.Path),
		"time_field", yStr(c.TimeField),
		"timezone", yStr(c.TimezoneName),
		"rotate", yMap(
			"records", yInt(c.Rotate.Records),
			"bytes", ySize(c.Rotate.Bytes),
			"interval", yDuration(c.Rotate.Interval),
			"schedule", yDuration(c.Rotate.Schedule),
		),
		"parquet", yMap(
			"codec", yStr(p.Codec),
			"row_group_bytes", ySize(p.RowGroupBytes),
			"page_bytes", ySize(p.PageBytes),
			"page_version", yInt(int64(p.PageVersion)),
			"dictionary", yBool(p.Dictionary),
			"page_index", yBool(p.PageIndex),
			"checksums", yBool(p.Checksums),
			"bloom_filters", yStrs(p.BloomFilters),
			"stats_truncate", yInt(int64(p.StatsTruncate)),
		),
		"memory", yMap("limit", ySize(c.Memory.Limit)),
		"metrics", yMap("listen", yStr(c.Metrics.Listen), "stall_timeout", yDuration(c.Metrics.StallTimeout)),
		"log", yMap("format", yStr(c.Log.Format), "level", yStr(c.Log.Level)),
		"shutdown", yStr(c.Shutdown),
		"shutdown_timeout", yDuration(c.ShutdownTimeout),
		"max_record_bytes", ySize(c.MaxRecordBytes),
		"errors", yStr(c.Errors),
		"dead_letter", yMap("topic", yStr(c.DeadLetter.Topic), "url", yStr(c.DeadLetter.URL)),
	)

	if t := c.Table; t != nil {
		cat := yMap("type", yStr(t.Catalog.Type))
		switch t.Catalog.Type {
		case "glue":
			cat.add("name", yStr(t.Catalog.Name), "region", yStr(t.Catalog.Region), "endpoint", yStr(t.Catalog.Endpoint), "catalog_id", yStr(t.Catalog.CatalogID))
		case "rest":
			cat.add("uri", yStr(redactURI(t.Catalog.URI)), "name", yStr(t.Catalog.Name))
			cat.add("warehouse", yStr(t.Catalog.Warehouse), "credential", ySecret(t.Catalog.Credential), "token", ySecret(t.Catalog.Token))
			if t.Catalog.SigV4 {
				cat.add("sigv4", yBool(true), "signing_name", yStr(t.Catalog.SigningName), "region", yStr(t.Catalog.Region))
			}
		default:
			cat.add("uri", yStr(redactURI(t.Catalog.URI)), "name", yStr(t.Catalog.Name))
		}
		parts := make([]string, len(t.PartitionBy))
		for i, p := range t.PartitionBy {
			parts[i] = p.String()
		}
		tbl := yMap(
			"format", yStr(t.Format),
			"catalog", cat,
			"namespace", yStr(t.Namespace),
			"name", yStr(t.Name),
			"commit_interval", yDuration(t.CommitInterval),
		)
		if t.FreshnessTarget > 0 {
			tbl.add("freshness_target", yDuration(t.FreshnessTarget))
		}
		if t.FreshnessFromRead {
			tbl.add("freshness_from", yStr("read"))
		}
		if t.PartitionBySet {
			tbl.add("partition_by", yStrs(parts))
		}
		tbl.add("format_version", yInt(int64(t.FormatVersion)))
		if t.TimestampMicros {
			tbl.add("timestamp_precision", yStr("micros"))
		}
		if t.Maintenance != nil {
			tbl.add("maintenance", t.Maintenance.node())
		}
		if t.Upsert() {
			tbl.add("mode", yStr(t.Mode), "key", yStrs(t.Key), "missing_rows", yStr(t.MissingRows))
		}
		root.add("table", tbl)
	}

	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode((*yaml.Node)(root)); err != nil {
		// Encoding a tree of plain scalars cannot fail.
		panic("config: rendering the config: " + err.Error())
	}
	enc.Close()
	return b.String()
}

// node is a YAML node under construction.
type node yaml.Node

func yMap(kv ...any) *node {
	n := &node{Kind: yaml.MappingNode}
	n.add(kv...)
	return n
}

// add appends key, value pairs: a string key, then a *node.
func (n *node) add(kv ...any) {
	for i := 0; i+1 < len(kv); i += 2 {
		n.Content = append(n.Content,
			&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: kv[i].(string)},
			(*yaml.Node)(kv[i+1].(*node)))
	}
}

func yScalar(tag, v string) *node { return &node{Kind: yaml.ScalarNode, Tag: tag, Value: v} }

// str writes a string; a $ is doubled so that the text loads as it reads.
func yStr(s string) *node { return yScalar("!!str", strings.ReplaceAll(s, "$", "$$")) }

func ySecret(s Secret) *node { return yScalar("!!str", s.String()) }
func yBool(b bool) *node     { return yScalar("!!bool", strconv.FormatBool(b)) }
func yInt(n int64) *node     { return yScalar("!!int", strconv.FormatInt(n, 10)) }
func ySize(n int64) *node {
	v := formatSize(n)
	if _, err := strconv.ParseInt(v, 10, 64); err == nil {
		return yScalar("!!int", v)
	}
	return yScalar("!!str", v)
}
func yDuration(d time.Duration) *node { return yScalar("!!str", formatDuration(d)) }

func yStrs(list []string) *node {
	n := &node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
	for _, s := range list {
		n.Content = append(n.Content, (*yaml.Node)(yStr(s)))
	}
	return n
}

// redactURI shows a catalog URI with the password of its user
// information, if any, replaced by "xxxxx", as url.URL.Redacted does. A
// URI that does not parse is not shown at all.
func redactURI(s Secret) string {
	if s == "" {
		return ""
	}
	u, err := url.Parse(s.Value())
	if err != nil {
		return redacted
	}
	return u.Redacted()
}
