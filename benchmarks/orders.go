package benchmarks

import (
	"fmt"
	"math/rand/v2"
)

// Order is a nested record: a struct, a list of structs, a list of strings
// and a map.
type Order struct {
	OrderID  int64             `parquet:"order_id"`
	Customer Customer          `parquet:"customer"`
	Items    []Item            `parquet:"items,list"`
	Tags     []string          `parquet:"tags,list"`
	Attrs    map[string]string `parquet:"attrs"`
}

// Customer is an Order's buyer.
type Customer struct {
	ID   int64  `parquet:"id"`
	Name string `parquet:"name,dict"`
	Tier string `parquet:"tier,dict"`
}

// Item is one line of an Order.
type Item struct {
	SKU   string  `parquet:"sku,dict"`
	Qty   int32   `parquet:"qty"`
	Price float64 `parquet:"price"`
}

// OrderSchema is Order in Parquet message syntax.
const OrderSchema = `message order {
  required int64 order_id;
  required group customer { required int64 id; required binary name (STRING); required binary tier (STRING); }
  required group items (LIST) { repeated group list { required group element { required binary sku (STRING); required int32 qty; required double price; } } }
  required group tags (LIST) { repeated group list { required binary element (STRING); } }
  required group attrs (MAP) { repeated group key_value { required binary key (STRING); required binary value (STRING); } }
}`

// Orders generates n deterministic orders.
func Orders(n int) []Order {
	r := rand.New(rand.NewPCG(3, 4))
	tiers := []string{"free", "plus", "pro", "enterprise"}
	tags := []string{"gift", "express", "fragile", "promo", "return", "b2b", "first"}
	keys := []string{"channel", "campaign", "coupon", "warehouse"}
	out := make([]Order, n)
	for i := range out {
		cid := int64(r.IntN(50_000))
		o := Order{
			OrderID:  int64(i) + 1_000_000,
			Customer: Customer{ID: cid, Name: fmt.Sprintf("customer-%d", cid), Tier: tiers[r.IntN(len(tiers))]},
		}
		for j, k := 0, r.IntN(5); j < k; j++ {
			o.Items = append(o.Items, Item{SKU: fmt.Sprintf("SKU-%05d", r.IntN(5000)), Qty: int32(1 + r.IntN(5)), Price: float64(r.IntN(20_000)) / 100})
		}
		for j, k := 0, r.IntN(3); j < k; j++ {
			o.Tags = append(o.Tags, tags[r.IntN(len(tags))])
		}
		o.Attrs = map[string]string{}
		for j, k := 0, r.IntN(3); j < k; j++ {
			o.Attrs[keys[r.IntN(len(keys))]] = fmt.Sprintf("v%d", r.IntN(100))
		}
		out[i] = o
	}
	return out
}
