"""Request bodies of the Ollama and OpenAI APIs (unknown fields are accepted and ignored, as the real servers do)."""

from pydantic import BaseModel, ConfigDict, Field


class Options(BaseModel):
    model_config = ConfigDict(extra="allow")
    temperature: float = Field(0.8, ge=0, le=5)
    top_p: float = Field(1.0, gt=0, le=1)
    seed: int | None = None
    num_predict: int = 128
    stop: list[str] | str | None = None


class Message(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: str
    content: str


class OllamaGenerate(BaseModel):
    model_config = ConfigDict(extra="allow")
    model: str
    prompt: str = ""
    system: str | None = None
    stream: bool = True
    options: Options = Field(default_factory=Options)


class OllamaChat(BaseModel):
    model_config = ConfigDict(extra="allow")
    model: str
    messages: list[Message]
    stream: bool = True
    options: Options = Field(default_factory=Options)


class OpenAICompletion(BaseModel):
    model_config = ConfigDict(extra="allow")
    model: str
    prompt: str | list[str] = ""
    max_tokens: int = 16
    temperature: float = Field(1.0, ge=0, le=5)
    top_p: float = Field(1.0, gt=0, le=1)
    seed: int | None = None
    stream: bool = False
    stop: list[str] | str | None = None


class OpenAIChat(OpenAICompletion):
    prompt: str = ""
    messages: list[Message]
    max_tokens: int = 128
