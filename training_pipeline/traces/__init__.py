"""Trajectories from any agent framework's OpenTelemetry traces (docs/traces.md): OTLP files read
(`otlp`), spans read by the GenAI and OpenInference conventions (`conventions`), and grouped into the
pipeline's trajectories (`assemble`)."""
