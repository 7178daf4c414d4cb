from rest_framework import serializers


class EntrySerializer(serializers.Serializer):
    name = serializers.CharField()
    shown = serializers.CharField(help_text="The name to show people: Unicode direction controls written as \\uXXXX.")
    path = serializers.CharField(help_text="Relative to the space's top folder; pass it back as `path`.")
    kind = serializers.ChoiceField(
        ["dir", "file", "link-out", "linked", "other"],
        help_text="link-out: a symlink leading out; linked: a file with other names (a hard link). Neither opens.",
    )
    size = serializers.IntegerField()
    mtime = serializers.FloatField(help_text="Seconds since the epoch.")


class ListingSerializer(serializers.Serializer):
    space = serializers.CharField()
    path = serializers.CharField(allow_blank=True)
    entries = EntrySerializer(many=True)


class TextSerializer(serializers.Serializer):
    path = serializers.CharField()
    text = serializers.CharField(allow_blank=True)
    size = serializers.IntegerField()
    cut = serializers.BooleanField(help_text="Only the file's start (or end, with tail) is shown.")


class NameSerializer(serializers.Serializer):
    path = serializers.CharField(allow_blank=True, required=False, default="")
    name = serializers.CharField(trim_whitespace=False)


class PathSerializer(serializers.Serializer):
    path = serializers.CharField()


class UploadStateSerializer(serializers.Serializer):
    name = serializers.CharField()
    received = serializers.IntegerField(help_text="Bytes on the cluster; send the next chunk from here.")
    size = serializers.IntegerField(allow_null=True)
    complete = serializers.BooleanField()
