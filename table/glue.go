package table

import (
	"context"
	"errors"

	"github.com/apache/iceberg-go/catalog/glue"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsglue "github.com/aws/aws-sdk-go-v2/service/glue"
	gluetypes "github.com/aws/aws-sdk-go-v2/service/glue/types"
)

// openGlue opens the AWS Glue Data Catalog of the region: the namespace is
// a Glue database, each table a Glue table of type ICEBERG whose
// metadata_location parameter names its current metadata file, which is
// what Athena reads. The credentials are the AWS SDK's default chain's;
// Glue's UpdateTable with the VersionId read is the commit's
// compare-and-swap.
func (k *Catalog) openGlue(ctx context.Context) error {
	c := k.cfg.Catalog
	cfg, err := awsConfig(ctx, c.Region)
	if err != nil {
		return err
	}
	if c.Endpoint != "" {
		// The endpoint is Glue's alone: iceberg-go hands the same
		// configuration to the S3 client of s3:// warehouses, which must
		// keep store.endpoint or AWS's own. Every other service falls back
		// to the SDK's resolution.
		cfg.EndpointResolverWithOptions = glueEndpoint(c.Endpoint, cfg.Region)
	}
	props := glue.AwsProperties{}
	for key, v := range k.props {
		props[key] = v
	}
	if c.CatalogID != "" {
		props[glue.CatalogIdKey] = c.CatalogID
	}
	cat, err := glue.NewCatalog(glue.WithAwsConfig(cfg), glue.WithAwsProperties(props))
	if err != nil {
		return err
	}
	k.cat = cat
	return nil
}

// glueEndpoint resolves Glue's endpoint to url and leaves every other
// service's to the SDK.
func glueEndpoint(url, region string) aws.EndpointResolverWithOptions {
	return aws.EndpointResolverWithOptionsFunc(func(service, _ string, _ ...any) (aws.Endpoint, error) {
		if service != awsglue.ServiceID {
			return aws.Endpoint{}, &aws.EndpointNotFoundError{}
		}
		return aws.Endpoint{URL: url, SigningRegion: region, Source: aws.EndpointSourceCustom}, nil
	})
}

// glueConflict reports whether err is Glue's refusal of an UpdateTable
// whose VersionId is no longer the table's: another writer committed
// since the table was read, and nothing was written.
func glueConflict(err error) bool {
	return errors.As(err, new(*gluetypes.ConcurrentModificationException))
}
