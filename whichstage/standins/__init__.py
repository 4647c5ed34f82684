"""Stand-in provider servers on 127.0.0.1 for the tests: the real Gemini, OpenAI and Ollama clients against the offline
backends."""
