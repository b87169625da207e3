package table

import (
	"maps"
	"testing"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/objstore"
)

// TestIOPropsAzureGCS: the properties iceberg-go's Azure and GCS IO get
// for abfss:// and gs:// warehouses, from the store section and the Azure
// environment variables.
func TestIOPropsAzureGCS(t *testing.T) {
	const abfss = "abfss://c@acct.dfs.core.windows.net/lake"
	tests := []struct {
		name              string
		store             config.Store
		account, key, sas string
		want              iceberg.Properties
	}{
		{"azurite shared key", config.Store{URL: abfss, Endpoint: "http://127.0.0.1:10000/acct"}, "acct", "a2V5", "",
			iceberg.Properties{icebergio.ADLSSharedKeyAccountName: "acct", icebergio.ADLSSharedKeyAccountKey: "a2V5",
				icebergio.ADLSProtocol: "http", icebergio.ADLSEndpoint: "127.0.0.1:10000"}},
		{"key, account from the URL", config.Store{URL: abfss}, "", "a2V5", "",
			iceberg.Properties{icebergio.ADLSSharedKeyAccountName: "acct", icebergio.ADLSSharedKeyAccountKey: "a2V5"}},
		{"SAS token", config.Store{URL: abfss, Endpoint: "https://acct.blob.core.chinacloudapi.cn"}, "", "", "?sv=1&sig=s",
			iceberg.Properties{icebergio.ADLSSasTokenPrefix + "acct.dfs.core.windows.net": "sv=1&sig=s",
				icebergio.ADLSProtocol: "https", icebergio.ADLSEndpoint: "blob.core.chinacloudapi.cn"}},
		{"default chain", config.Store{URL: abfss}, "", "", "", iceberg.Properties{}},
		{"gcs emulator", config.Store{URL: "gs://b/lake", Endpoint: "http://127.0.0.1:4443"}, "", "", "",
			iceberg.Properties{icebergio.GCSEndpoint: "http://127.0.0.1:4443/storage/v1/", icebergio.GCSNoAuth: "true", icebergio.GCSUseJSONAPI: "true"}},
		{"gcs private endpoint", config.Store{URL: "gs://b", Endpoint: "https://storage.example.com/storage/v1/"}, "", "", "",
			iceberg.Properties{icebergio.GCSEndpoint: "https://storage.example.com/storage/v1/", icebergio.GCSUseJSONAPI: "true"}},
		{"gcs default", config.Store{URL: "gs://b"}, "", "", "", iceberg.Properties{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(objstore.EnvAzureAccount, tt.account)
			t.Setenv(objstore.EnvAzureKey, tt.key)
			t.Setenv(objstore.EnvAzureSASToken, tt.sas)
			if got := ioProps(tt.store); !maps.Equal(got, tt.want) {
				t.Errorf("ioProps = %v, want %v", got, tt.want)
			}
		})
	}
}
