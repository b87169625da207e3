package table

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
)

// awsConfig loads the AWS SDK's configuration as a glue catalog and a
// SigV4-signed rest catalog use it: the default chain's credentials and
// region, the region replaced by region when set. It fails when no region
// is found.
func awsConfig(ctx context.Context, region string) (aws.Config, error) {
	var opts []func(*awsconfig.LoadOptions) error
	if region != "" {
		opts = append(opts, awsconfig.WithRegion(region))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("loading the AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return aws.Config{}, errors.New("no AWS region: set table.catalog.region, or AWS_REGION in the environment")
	}
	return cfg, nil
}

// sigV4 is how a rest catalog with table.catalog.sigv4 signs its
// requests: the credentials of the AWS SDK's default chain, found when the
// catalog opens, and the region and service name they are signed for.
type sigV4 struct {
	cfg     aws.Config
	service string
	key     string // the access key id, to name in errors; not a secret
	source  string // the provider that found the credentials
}

// loadSigV4 finds the region and the credentials a rest catalog's requests
// are signed with, so that a catalog without them fails to open rather
// than at its first request, with a message that says where they are
// looked for.
func loadSigV4(ctx context.Context, region, service string) (*sigV4, error) {
	cfg, err := awsConfig(ctx, region)
	if err != nil {
		return nil, err
	}
	if cfg.Credentials == nil {
		return nil, errors.New("no AWS credentials to sign the requests with")
	}
	creds, err := cfg.Credentials.Retrieve(ctx)
	if err != nil {
		return nil, fmt.Errorf("no AWS credentials to sign the requests with (the AWS SDK's default chain: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, the shared credentials and config files, web identity, or an ECS or EC2 role): %w", err)
	}
	return &sigV4{cfg: cfg, service: service, key: creds.AccessKeyID, source: creds.Source}, nil
}

// options are iceberg-go's REST options that sign every request.
func (s *sigV4) options() []rest.Option {
	return []rest.Option{rest.WithAwsConfig(s.cfg), rest.WithSigV4RegionSvc(s.cfg.Region, s.service)}
}

// refused explains err when the catalog refused a signed request as
// forbidden (HTTP 403): with SigV4 that is most often a signature for
// another region or service than the endpoint's, or credentials without
// the permission. Other errors are returned as they are.
func (s *sigV4) refused(err error) error {
	if !errors.Is(err, rest.ErrForbidden) {
		return err
	}
	return fmt.Errorf("the catalog refused the request signed with SigV4 for region %s and service %s with access key %s (from %s): check table.catalog.region, table.catalog.signing_name and the credentials' permissions: %w",
		s.cfg.Region, s.service, s.key, s.source, err)
}
