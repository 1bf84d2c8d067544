"""A day coming in: records validated, their credentials redacted and stored (`ingest`), the rest
quarantined with the reason (`quarantine`), and the stored day privacy-filtered (`filtered`)."""
