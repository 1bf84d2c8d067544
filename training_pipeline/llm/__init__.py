"""An OpenAI-compatible chat client (vLLM, Ollama, llama.cpp's server, OpenAI...)."""
