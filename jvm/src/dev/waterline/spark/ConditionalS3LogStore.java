package dev.waterline.spark;

import io.delta.storage.HadoopFileSystemLogStore;
import java.io.ByteArrayOutputStream;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.util.Arrays;
import java.util.Iterator;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FSDataOutputStreamBuilder;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * A Delta LogStore for S3 whose commit files are created only if absent, so two Spark drivers,
 * and Spark beside waterline's own commit writer, can never overwrite each other's commit.
 *
 * <p>Delta's default S3 store ({@code S3SingleDriverLogStore}) checks for the file and then
 * writes it: safe for one driver only. Since S3 honours {@code If-None-Match: *} on PutObject,
 * S3A (Hadoop 3.5) writes a file that way when its create builder is given
 * {@code fs.option.create.conditional.overwrite}; this store asks for it on every commit file.
 *
 * <p>The write is idempotent: when it fails in any way (a 412 because an SDK retry met the copy
 * its first, unanswered try had written, a timeout, a reset), the file is read back and compared
 * with the bytes written. The same bytes are this commit (every commit file carries its own
 * timestamp and transaction id): success. Other bytes are another writer's commit: Delta's
 * {@link FileAlreadyExistsException}, after which Delta checks for conflicts and retries at the
 * next version, as it does for any concurrent commit. Overwrites (Delta's
 * {@code _last_checkpoint}) are plain writes.
 *
 * <p>Set with {@code spark.delta.logStore.s3a.impl} (and {@code .s3.impl}); waterline's session
 * configuration does.
 */
public class ConditionalS3LogStore extends HadoopFileSystemLogStore {
  static final String CONDITIONAL_CREATE = "fs.option.create.conditional.overwrite";

  public ConditionalS3LogStore(Configuration hadoopConf) {
    super(hadoopConf);
  }

  @Override
  public void write(Path path, Iterator<String> actions, Boolean overwrite, Configuration hadoopConf)
      throws IOException {
    FileSystem fs = path.getFileSystem(hadoopConf);
    byte[] body = encode(actions);
    if (overwrite) {
      try (FSDataOutputStream out = fs.create(path, true)) {
        out.write(body);
      }
      return;
    }
    try {
      FSDataOutputStreamBuilder<?, ?> builder = fs.createFile(path).overwrite(false);
      builder.must(CONDITIONAL_CREATE, true);
      try (FSDataOutputStream out = builder.build()) {
        out.write(body);
      }
    } catch (IOException failed) {
      byte[] found = readOrNull(fs, path);
      if (found != null && Arrays.equals(found, body)) {
        return; // our own write: an earlier try landed and its answer was lost
      }
      if (found != null) {
        FileAlreadyExistsException exists = new FileAlreadyExistsException(path.toString());
        exists.initCause(failed);
        throw exists;
      }
      throw failed;
    }
  }

  @Override
  public Boolean isPartialWriteVisible(Path path, Configuration hadoopConf) {
    return false; // an S3 PUT is visible whole or not at all
  }

  private static byte[] encode(Iterator<String> actions) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    while (actions.hasNext()) {
      byte[] line = (actions.next() + "\n").getBytes(StandardCharsets.UTF_8);
      out.write(line, 0, line.length);
    }
    return out.toByteArray();
  }

  private static byte[] readOrNull(FileSystem fs, Path path) throws IOException {
    try (InputStream in = fs.open(path)) {
      return in.readAllBytes();
    } catch (FileNotFoundException absent) {
      return null;
    }
  }
}
