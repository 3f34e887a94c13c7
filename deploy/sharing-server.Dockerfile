# The Delta Sharing server (`waterline share serve`, docs/sharing.md) from the wheel.
#
#   python -m build --wheel                    # dist/waterline_tiers-<version>-py3-none-any.whl
#   docker build -f deploy/sharing-server.Dockerfile -t waterline-sharing .
#   docker run -p 8080:8080 -v $PWD/feeds:/srv/waterline/feeds -e AWS_REGION=... \
#       waterline-sharing /srv/waterline/feeds/ticks.yaml
#
# The server reads the tiers' Delta logs and signs file URLs: no Spark, no JVM. It listens on
# plain HTTP behind the TLS-terminating proxy or ingress in front of it (--insecure); to
# terminate TLS itself, override the entry point with --tls-cert/--tls-key (docs/deployment.md).
FROM python:3.12-slim-bookworm

COPY dist/ /tmp/dist/
RUN pip install --no-cache-dir "$(ls /tmp/dist/waterline_tiers-*.whl)[sharing]" && rm -rf /tmp/dist

RUN useradd --create-home --uid 10001 waterline && mkdir -p /srv/waterline/feeds && chown -R waterline /srv/waterline
USER waterline
WORKDIR /srv/waterline
EXPOSE 8080
ENTRYPOINT ["waterline", "share", "serve", "--host", "0.0.0.0", "--port", "8080", "--insecure"]
# The feed specs to serve (mounted: a volume, a ConfigMap); their warehouse holds the token store.
CMD ["/srv/waterline/feeds/feed.yaml"]
