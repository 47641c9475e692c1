# The hub as a container image (tests never need Docker). Build: docker build -t ahp-hub .
FROM node:20-bookworm-slim AS build
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build && npm prune --omit=dev --omit=optional

FROM node:20-bookworm-slim
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/package.json ./
EXPOSE 8787
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "dist/server/main.js"]
CMD ["--host", "0.0.0.0", "--port", "8787", "--data", "/data", "--auth", "/config/tokens.json"]
