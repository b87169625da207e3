#!/bin/sh
# The compose file's producers: generated events, RATE a second (200 by
# default), until stopped. POSIX sh, for the apache/kafka image (busybox)
# and the cp-schema-registry image (bash).
#
#   produce.sh json             clickstream JSON (key<TAB>value) into $TOPIC (events)
#   produce.sh avro             orders in Avro, order.avsc, into $TOPIC (orders)
#   produce.sh json|avro --print N
#                               prints N records and exits (test/deploy_test.go
#                               converts them with events.schema and order.avsc)
set -eu
kind=${1:?usage: produce.sh json|avro [--print N]}
rate=${RATE:-200}
count=0
here=$(dirname "$0")

json_line() {
	i=$1
	case $((i % 8)) in
	0) c=US ;; 1) c=DE ;; 2) c=FR ;; 3) c=GB ;; 4) c=JP ;; 5) c=BR ;; 6) c=IN ;; *) c=CA ;;
	esac
	case $((i % 4)) in
	0) tags='[]' ;; 1) tags='["web"]' ;; 2) tags='["mobile","new"]' ;; *) tags='["sale","promo","vip"]' ;;
	esac
	if [ $((i % 2)) -eq 0 ]; then flag=true; else flag=false; fi
	printf 'user_%d\t{"id":%d,"ts":"%s.%06dZ","user":"user_%d","country":"%s","amount":%d.%02d,"tags":%s,"payload":{"session":"s%08x","nested":{"level":%d,"flag":%s,"score":0.%02d}}}\n' \
		$((i % 1000)) "$i" "$stamp" $((i % 1000000)) $((i % 1000)) "$c" $((i * 7 % 1000)) $((i % 100)) "$tags" $((i / 10)) $((i % 10)) "$flag" $((i % 97))
}

avro_line() {
	i=$1
	case $((i % 3)) in
	0) status=CREATED ;; 1) status=PAID ;; *) status=SHIPPED ;;
	esac
	printf '{"id":%d,"ts":%d,"customer":"c_%d","amount":%d.%02d,"status":"%s","items":["sku_%d","sku_%d"]}\n' \
		"$i" $((epoch * 1000 + i % 1000)) $((i % 500)) $((i * 13 % 1000)) $((i % 100)) "$status" $((i % 50)) $((i % 7))
}

# gen writes count records (forever when count is 0), rate a second.
gen() {
	i=0
	while :; do
		epoch=$(date -u +%s)
		stamp=$(date -u +%Y-%m-%dT%H:%M:%S)
		n=0
		while [ "$n" -lt "$rate" ]; do
			i=$((i + 1))
			n=$((n + 1))
			"${kind}_line" "$i"
			if [ "$count" -gt 0 ] && [ "$i" -ge "$count" ]; then
				return 0
			fi
		done
		[ "$count" -gt 0 ] || sleep 1
	done
}

case $kind in
json | avro) ;;
*) echo "produce.sh: want json or avro, got $kind" >&2; exit 2 ;;
esac
if [ "${2:-}" = --print ]; then
	count=${3:?--print needs a count}
	gen
	exit 0
fi

echo "producing $kind records to ${TOPIC:-} on ${BROKERS:?set BROKERS}, $rate a second" >&2
case $kind in
json)
	gen | /opt/kafka/bin/kafka-console-producer.sh --bootstrap-server "$BROKERS" --topic "${TOPIC:-events}" \
		--property parse.key=true --property "key.separator=$(printf '\t')"
	;;
avro)
	gen | kafka-avro-console-producer --bootstrap-server "$BROKERS" --topic "${TOPIC:-orders}" \
		--property "schema.registry.url=${REGISTRY:?set REGISTRY}" \
		--property "value.schema=$(cat "$here/order.avsc")"
	;;
esac
