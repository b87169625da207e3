package benchmarks

import (
	"io"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/writer"
)

const orderRows = 250_000

func BenchmarkOrders(b *testing.B) {
	data := Orders(orderRows)
	benchWriters(b, len(data), map[string]func(io.Writer) error{
		"pqsink":     pqsinkWriter(OrderSchema, func(g *rowgroup.RowGroup, w *writer.Writer) error { return writeOrders(g, w, data) }),
		"parquet-go": parquetGoWriter(data),
		"arrow-go":   func(w io.Writer) error { return writeOrdersArrow(w, data) },
	})
}

// writeOrders stripes each order into the row group's columns by hand,
// with its Dremel levels, as a record shredder does, checking the row
// group's size every sizeCheckRows rows.
func writeOrders(g *rowgroup.RowGroup, w *writer.Writer, data []Order) error {
	c := g.Columns()
	var keys []string
	for i := range data {
		o := &data[i]
		c[0].AppendInt64(0, o.OrderID)
		c[1].AppendInt64(0, o.Customer.ID)
		c[2].AppendBytes(0, []byte(o.Customer.Name))
		c[3].AppendBytes(0, []byte(o.Customer.Tier))
		if len(o.Items) == 0 {
			c[4].Null(0, 0)
			c[5].Null(0, 0)
			c[6].Null(0, 0)
		}
		for j, it := range o.Items {
			rep := uint8(min(j, 1))
			c[4].AppendBytes(rep, []byte(it.SKU))
			c[5].AppendInt32(rep, it.Qty)
			c[6].AppendDouble(rep, it.Price)
		}
		if len(o.Tags) == 0 {
			c[7].Null(0, 0)
		}
		for j, t := range o.Tags {
			c[7].AppendBytes(uint8(min(j, 1)), []byte(t))
		}
		keys = keys[:0]
		for k := range o.Attrs {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if len(keys) == 0 {
			c[8].Null(0, 0)
			c[9].Null(0, 0)
		}
		for j, k := range keys {
			rep := uint8(min(j, 1))
			c[8].AppendBytes(rep, []byte(k))
			c[9].AppendBytes(rep, []byte(o.Attrs[k]))
		}
		g.EndRow()
		if i%sizeCheckRows == sizeCheckRows-1 && g.Size() >= 128<<20 {
			if err := w.WriteRowGroup(g); err != nil {
				return err
			}
			g.Reset()
		}
	}
	return nil
}

func writeOrdersArrow(out io.Writer, data []Order) error {
	itemType := arrow.StructOf(
		arrow.Field{Name: "sku", Type: arrow.BinaryTypes.String},
		arrow.Field{Name: "qty", Type: arrow.PrimitiveTypes.Int32},
		arrow.Field{Name: "price", Type: arrow.PrimitiveTypes.Float64},
	)
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "order_id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "customer", Type: arrow.StructOf(
			arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64},
			arrow.Field{Name: "name", Type: arrow.BinaryTypes.String},
			arrow.Field{Name: "tier", Type: arrow.BinaryTypes.String},
		)},
		{Name: "items", Type: arrow.ListOfNonNullable(itemType)},
		{Name: "tags", Type: arrow.ListOfNonNullable(arrow.BinaryTypes.String)},
		{Name: "attrs", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String)},
	}, nil)
	fw, err := newArrowWriter(out, sc)
	if err != nil {
		return err
	}
	bld := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer bld.Release()
	orderID := bld.Field(0).(*array.Int64Builder)
	cust := bld.Field(1).(*array.StructBuilder)
	custID := cust.FieldBuilder(0).(*array.Int64Builder)
	custName := cust.FieldBuilder(1).(*array.StringBuilder)
	custTier := cust.FieldBuilder(2).(*array.StringBuilder)
	items := bld.Field(2).(*array.ListBuilder)
	item := items.ValueBuilder().(*array.StructBuilder)
	sku := item.FieldBuilder(0).(*array.StringBuilder)
	qty := item.FieldBuilder(1).(*array.Int32Builder)
	price := item.FieldBuilder(2).(*array.Float64Builder)
	tags := bld.Field(3).(*array.ListBuilder)
	tag := tags.ValueBuilder().(*array.StringBuilder)
	attrs := bld.Field(4).(*array.MapBuilder)
	keyB := attrs.KeyBuilder().(*array.StringBuilder)
	valB := attrs.ItemBuilder().(*array.StringBuilder)
	var keys []string
	const batch = 64 * 1024
	for i := 0; i < len(data); i += batch {
		for _, o := range data[i:min(i+batch, len(data))] {
			orderID.Append(o.OrderID)
			cust.Append(true)
			custID.Append(o.Customer.ID)
			custName.Append(o.Customer.Name)
			custTier.Append(o.Customer.Tier)
			items.Append(true)
			for _, it := range o.Items {
				item.Append(true)
				sku.Append(it.SKU)
				qty.Append(it.Qty)
				price.Append(it.Price)
			}
			tags.Append(true)
			for _, t := range o.Tags {
				tag.Append(t)
			}
			attrs.Append(true)
			keys = keys[:0]
			for k := range o.Attrs {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				keyB.Append(k)
				valB.Append(o.Attrs[k])
			}
		}
		rec := bld.NewRecordBatch()
		err := fw.Write(rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
	return fw.Close()
}
