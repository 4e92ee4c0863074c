# Dockerfile: seckill-server and seckill-worker in one slim image.
# Build: docker build -t seckill .
# Run:   docker run -e SECKILL_REDIS_HOST=... -e SECKILL_PG_CONNINFO=... seckill            (server)
#        docker run ... seckill seckill-worker                                            (worker)
#        docker run -e SECKILL_WEBHOOK_ENDPOINTS=... seckill seckill-webhooks             (webhooks)
#        docker run ... seckill /usr/local/share/seckill/scripts/migrate.sh               (schema)
# Or the whole system: docker-compose.yml. `make docker-check` builds and runs it on a machine
# without a registry (scripts/docker_check.sh: the base below made by debootstrap).

# Both stages start from one Debian 12 image: the registry's, or any other Debian 12 under
# this tag (`--build-arg BASE=...` names another).
ARG BASE=debian:12-slim

FROM ${BASE} AS build
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        build-essential cmake pkg-config libmicrohttpd-dev libhiredis-dev libjansson-dev \
        libpq-dev libssl-dev libevent-dev libzookeeper-mt-dev libcurl4-openssl-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt ./
COPY cmake cmake
COPY lua lua
COPY web web
COPY service service
RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DSECKILL_TESTS=OFF \
    && cmake --build build -j"$(nproc)" \
    && cmake --install build --prefix /opt/seckill

FROM ${BASE}
# The release: CMakeLists.txt's project VERSION (unit_docs fails when the two differ).
LABEL org.opencontainers.image.title="seckill"
LABEL org.opencontainers.image.version="0.3.0"
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        libmicrohttpd12 libhiredis0.14 libjansson4 libpq5 libssl3 libevent-2.1-7 \
        libevent-pthreads-2.1-7 libzookeeper-mt2 libcurl4 \
        postgresql-client curl \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --no-create-home --shell /usr/sbin/nologin seckill
COPY --from=build /opt/seckill/bin/ /usr/local/bin/
COPY sql /usr/local/share/seckill/sql
COPY scripts/migrate.sh /usr/local/share/seckill/scripts/migrate.sh
COPY config/seckill.conf.example /etc/seckill/seckill.conf.example
# The laboratory's results for /lab (the default lab_results is relative to a checkout's root).
COPY loadtest/results/experiments.json /usr/local/share/seckill/lab/experiments.json
USER seckill
# The laboratory is off (its routes answer 404 lab_off): `docker run -e SECKILL_LAB=on` for a test
# bed, never for a shop.
ENV SECKILL_HOST=0.0.0.0 SECKILL_PORT=8080 SECKILL_LAB=off \
    SECKILL_LAB_RESULTS=/usr/local/share/seckill/lab/experiments.json
EXPOSE 8080
HEALTHCHECK --interval=5s --timeout=2s --retries=3 \
    CMD curl -fsS "http://127.0.0.1:${SECKILL_PORT}/health" >/dev/null || exit 1
CMD ["seckill-server"]
